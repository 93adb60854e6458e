"""When a list is due and which one is overdue (pricefeed.schedule): pure arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

from pricefeed.schedule import Period, Schedule, zone_problem

MOSCOW = "Europe/Moscow"
BERLIN = "Europe/Berlin"
MONDAY, TUESDAY, THURSDAY, SUNDAY = 1, 2, 4, 7


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def every(hours: int, grace: int = 0) -> Schedule:
    schedule = Schedule.build(
        every_hours=hours, weekdays=(), by=None, zone=MOSCOW, grace_minutes=grace
    )
    assert schedule is not None
    return schedule


def weekdays(days: set[int], by: time, zone: str = MOSCOW, grace: int = 0) -> Schedule:
    schedule = Schedule.build(
        every_hours=None, weekdays=days, by=by, zone=zone, grace_minutes=grace
    )
    assert schedule is not None
    return schedule


SINCE = utc(2026, 1, 1)  # the config was made long before


# -- every N hours ------------------------------------------------------------------------


def test_every_n_hours_is_due_n_hours_after_the_last_list():
    schedule = every(24)
    last = utc(2026, 12, 1, 6, 0)

    assert (
        schedule.missed_period(now=utc(2026, 12, 2, 5, 59), last_arrival=last, since=SINCE) is None
    )
    assert schedule.missed_period(
        now=utc(2026, 12, 2, 6, 0), last_arrival=last, since=SINCE
    ) == Period(start=last, due=utc(2026, 12, 2, 6, 0))


def test_every_n_hours_waits_for_the_grace():
    schedule = every(6, grace=30)
    last = utc(2026, 12, 1, 0, 0)

    assert (
        schedule.missed_period(now=utc(2026, 12, 1, 6, 29), last_arrival=last, since=SINCE) is None
    )
    missed = schedule.missed_period(now=utc(2026, 12, 1, 6, 30), last_arrival=last, since=SINCE)
    assert missed == Period(start=last, due=utc(2026, 12, 1, 6, 0))


def test_every_n_hours_names_the_latest_missed_period_when_several_went_by():
    schedule = every(6)
    last = utc(2026, 12, 1, 0, 0)

    missed = schedule.missed_period(now=utc(2026, 12, 1, 19, 0), last_arrival=last, since=SINCE)

    # Due at 06:00, 12:00 and 18:00: the period of 12:00–18:00 is the latest missed.
    assert missed == Period(start=utc(2026, 12, 1, 12, 0), due=utc(2026, 12, 1, 18, 0))


def test_every_n_hours_without_any_list_counts_from_when_the_config_was_made():
    schedule = every(24)
    made = utc(2026, 12, 1, 10, 0)

    assert schedule.missed_period(now=utc(2026, 12, 2, 9, 0), last_arrival=None, since=made) is None
    assert schedule.missed_period(
        now=utc(2026, 12, 2, 10, 0), last_arrival=None, since=made
    ) == Period(start=made, due=utc(2026, 12, 2, 10, 0))


def test_every_n_hours_counts_real_hours_across_a_change_to_summer_time():
    # Berlin went to summer time at 01:00 UTC on 29 March 2026: 24 hours are 24 hours.
    schedule = Schedule.build(every_hours=24, weekdays=(), by=None, zone=BERLIN)
    assert schedule is not None
    last = utc(2026, 3, 28, 9, 0)

    missed = schedule.missed_period(now=utc(2026, 3, 29, 9, 0), last_arrival=last, since=SINCE)

    assert missed == Period(start=last, due=utc(2026, 3, 29, 9, 0))


# -- weekdays by a time ------------------------------------------------------------------


def test_weekdays_by_a_time_in_moscow():
    # Mondays and Thursdays by 10:00 Moscow time (UTC+3 all year): 07:00 UTC.
    schedule = weekdays({MONDAY, THURSDAY}, time(10, 0))
    monday = datetime(2026, 11, 30, tzinfo=ZoneInfo(MOSCOW))  # a Monday

    assert (
        schedule.missed_period(now=utc(2026, 11, 30, 6, 59), last_arrival=None, since=SINCE)
        # before Monday's time the latest due one was Thursday's, 26 November
        == Period(
            start=datetime(2026, 11, 26, tzinfo=ZoneInfo(MOSCOW)),
            due=utc(2026, 11, 26, 7, 0),
        )
    )
    assert schedule.missed_period(
        now=utc(2026, 11, 30, 7, 0), last_arrival=None, since=SINCE
    ) == Period(start=monday, due=utc(2026, 11, 30, 7, 0))


def test_a_list_that_came_on_the_day_before_the_time_is_on_time():
    schedule = weekdays({MONDAY, THURSDAY}, time(10, 0))
    came = utc(2026, 11, 29, 21, 30)  # 00:30 Monday in Moscow

    assert (
        schedule.missed_period(now=utc(2026, 11, 30, 12, 0), last_arrival=came, since=SINCE) is None
    )


def test_a_list_that_came_the_evening_before_is_not_the_days_list():
    schedule = weekdays({MONDAY}, time(10, 0))
    came = utc(2026, 11, 29, 20, 0)  # 23:00 Sunday in Moscow

    missed = schedule.missed_period(now=utc(2026, 11, 30, 12, 0), last_arrival=came, since=SINCE)

    assert missed is not None and missed.due == utc(2026, 11, 30, 7, 0)


def test_a_late_list_belongs_to_the_day_it_was_late_for():
    schedule = weekdays({MONDAY, THURSDAY}, time(10, 0))
    late = utc(2026, 11, 30, 12, 0)  # Monday 15:00 in Moscow

    assert (
        schedule.missed_period(now=utc(2026, 12, 2, 12, 0), last_arrival=late, since=SINCE) is None
    )
    # Thursday expects a list of its own.
    missed = schedule.missed_period(now=utc(2026, 12, 3, 7, 0), last_arrival=late, since=SINCE)
    assert missed is not None and missed.due == utc(2026, 12, 3, 7, 0)


def test_weekdays_by_a_time_follow_summer_time_in_berlin():
    # Mondays by 10:00 Berlin time: 09:00 UTC in winter, 08:00 UTC in summer (from 29
    # March 2026) and 09:00 UTC again after 25 October.
    schedule = weekdays({MONDAY}, time(10, 0), zone=BERLIN)

    def due_on(day: datetime) -> datetime:
        missed = schedule.missed_period(now=day, last_arrival=None, since=SINCE)
        assert missed is not None
        return missed.due

    assert due_on(utc(2026, 3, 23, 12, 0)) == utc(2026, 3, 23, 9, 0)
    assert due_on(utc(2026, 3, 30, 12, 0)) == utc(2026, 3, 30, 8, 0)
    assert due_on(utc(2026, 10, 26, 12, 0)) == utc(2026, 10, 26, 9, 0)
    # The period begins at midnight Berlin time: 22:00 UTC on the Sunday in summer.
    missed = schedule.missed_period(now=utc(2026, 3, 30, 12, 0), last_arrival=None, since=SINCE)
    assert missed is not None and missed.start == utc(2026, 3, 29, 22, 0)


def test_a_time_skipped_by_summer_time_is_read_with_the_offset_before_the_change():
    # 02:30 does not exist in Berlin on Sunday 29 March 2026: it is 03:30 summer time.
    schedule = weekdays({SUNDAY}, time(2, 30), zone=BERLIN)

    missed = schedule.missed_period(now=utc(2026, 3, 29, 12, 0), last_arrival=None, since=SINCE)

    assert missed is not None and missed.due == utc(2026, 3, 29, 1, 30)


def test_weekdays_wait_for_the_grace():
    schedule = weekdays({TUESDAY}, time(9, 0), grace=45)  # 06:00 UTC, grace to 06:45

    assert schedule.missed_period(now=utc(2026, 12, 1, 6, 44), last_arrival=None, since=SINCE) == (
        Period(start=datetime(2026, 11, 24, tzinfo=ZoneInfo(MOSCOW)), due=utc(2026, 11, 24, 6, 0))
    )
    missed = schedule.missed_period(now=utc(2026, 12, 1, 6, 45), last_arrival=None, since=SINCE)
    assert missed is not None and missed.due == utc(2026, 12, 1, 6, 0)


def test_nothing_is_due_before_the_config_was_made():
    schedule = weekdays({TUESDAY}, time(9, 0))

    made = utc(2026, 12, 1, 8, 0)  # Tuesday 11:00 in Moscow, after the time
    assert (
        schedule.missed_period(now=utc(2026, 12, 1, 12, 0), last_arrival=None, since=made) is None
    )


# -- no schedule ---------------------------------------------------------------------------


def test_a_config_without_a_schedule_expects_nothing():
    assert Schedule.build(every_hours=None, weekdays=(), by=None, zone=MOSCOW) is None
    # Half a rule is no rule (the form refuses it).
    assert Schedule.build(every_hours=None, weekdays=(MONDAY,), by=None, zone=MOSCOW) is None
    assert Schedule.build(every_hours=None, weekdays=(), by=time(10), zone=MOSCOW) is None


def test_zone_names_are_checked_against_the_iana_database():
    assert zone_problem("Europe/Moscow") == ""
    assert zone_problem("Europe/Atlantis") != ""
    assert zone_problem("../etc/passwd") != ""
    assert zone_problem("UTC+3") != ""
