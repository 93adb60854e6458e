"""When a config's price list is expected, and which expected list is overdue.

Pure arithmetic on aware datetimes: no database, no clock (the caller passes the
database's ``now()``). A schedule is one of two kinds:

- **every N hours**: a list is due N hours after the last one arrived (after the
  config was made, when none has yet). Periods follow one another from that moment, N
  hours each, counted in absolute time (a change to or from summer time does not
  stretch one).
- **on weekdays by a time**: on each chosen weekday, a list is due by the time of day
  in the schedule's zone. The period of such a day begins at its midnight there and
  lasts until the midnight of the next chosen day: a list that came on the day before
  the time counts; one that comes late still belongs to the day it was late for, so the
  next chosen day expects a list of its own.

A list is overdue when the grace has passed after the due time of its period and no
list has arrived since the period began.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ISO_WEEKDAYS = range(1, 8)  # Monday = 1 … Sunday = 7, as date.isoweekday()


def zone_problem(name: str) -> str:
    """What is wrong with a time zone name ("" when it names an IANA zone)."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name!r}"
    return ""


@dataclass(frozen=True)
class Period:
    """One expected list: lists arriving from ``start`` on count for it; it is due at
    ``due`` (the grace not included)."""

    start: datetime
    due: datetime


@dataclass(frozen=True)
class Schedule:
    """When lists are expected: ``every_hours``, or ``weekdays`` (ISO numbers) by
    ``by``, in ``zone``; ``grace`` is how long after the due time a list is still on
    time."""

    zone: ZoneInfo
    every_hours: int | None = None
    weekdays: frozenset[int] = frozenset()
    by: time | None = None
    grace: timedelta = timedelta(0)

    @classmethod
    def build(
        cls,
        *,
        every_hours: int | None,
        weekdays: Iterable[int],
        by: time | None,
        zone: str,
        grace_minutes: int = 0,
    ) -> Schedule | None:
        """The schedule these settings describe; None when they expect nothing."""
        days = frozenset(int(d) for d in weekdays or ())
        if not every_hours and not (days and by is not None):
            return None
        return cls(
            zone=ZoneInfo(zone),
            every_hours=every_hours or None,
            weekdays=days if not every_hours else frozenset(),
            by=by if not every_hours else None,
            grace=timedelta(minutes=grace_minutes or 0),
        )

    def missed_period(
        self, *, now: datetime, last_arrival: datetime | None, since: datetime
    ) -> Period | None:
        """The latest period whose list is overdue at ``now``: its due time and the grace
        have passed, and no list has arrived since it began (``last_arrival`` is the
        latest arrival, None for none). ``since`` is when the config was made: nothing
        is due before it. None when nothing is overdue."""
        if self.every_hours:
            return self._missed_every(now=now, last_arrival=last_arrival, since=since)
        period = self.last_due(now - self.grace)
        if period is None or period.due < since:
            return None
        if last_arrival is not None and last_arrival >= period.start:
            return None
        return period

    def _missed_every(
        self, *, now: datetime, last_arrival: datetime | None, since: datetime
    ) -> Period | None:
        anchor = max(last_arrival, since) if last_arrival is not None else since
        step = timedelta(hours=self.every_hours or 0)
        passed = (now - self.grace - anchor) / step
        if passed < 1:
            return None
        missed = math.floor(passed)  # the periods whose due time (and grace) passed
        return Period(start=anchor + (missed - 1) * step, due=anchor + missed * step)

    def last_due(self, moment: datetime) -> Period | None:
        """The period of a chosen weekday whose due time is the latest at or before
        ``moment``."""
        if self.by is None or not self.weekdays:
            return None
        local = moment.astimezone(self.zone).date()
        for back in range(8):
            day = local - timedelta(days=back)
            if day.isoweekday() not in self.weekdays:
                continue
            due = self._at(day, self.by)
            if due <= moment:
                return Period(start=self._at(day, time(0)), due=due)
        return None

    def _at(self, day: date, moment: time) -> datetime:
        """``moment`` on ``day`` in the zone, as an aware datetime. A time skipped by a
        change to summer time is read with the offset before the change (02:30 in
        Berlin on the last Sunday of March is 03:30 summer time); a time that happens
        twice is its first."""
        local = datetime.combine(day, moment, tzinfo=self.zone)
        return local.astimezone(ZoneInfo("UTC")).astimezone(self.zone)
