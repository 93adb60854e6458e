"""What the front page counts over time: messages, imports and notifications by state
per hour or per window, and how long mail took from arrival to its import finished.

The current state (backlogs, the outbox, listeners and leases) comes from the apps'
own selectors (``console.dashboard``); these are the aggregates over a time window that
no app had yet. Each is one aggregate query, grouped in SQL (at most 168 hourly rows
come back for a week), whatever the number of rows counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet
from django.db.models.functions import TruncHour
from django.utils import timezone

from mailboxes.models import InboundMessage
from notifications.models import Notification
from pricefeed.models import PriceImport

from .sql import PercentileCont

Msg = InboundMessage.Status
Imp = PriceImport.Status
Note = Notification.Status

HOURS_IN_DAY = 24
HOURS_IN_WEEK = 7 * 24


@dataclass(frozen=True)
class Windows:
    """The hours the front page counts in: the current hour (begun, in the current time
    zone) and those before it. "24 h" is the last 24 of them, "7 days" the last 168, so
    that the hourly charts and the counts agree, and a link can name the same start."""

    now: datetime
    hours: list[datetime]  # the starts of the last 168 hours, oldest first, in UTC

    @property
    def day_hours(self) -> list[datetime]:
        return self.hours[-HOURS_IN_DAY:]

    @property
    def day_since(self) -> datetime:
        return self.hours[-HOURS_IN_DAY]

    @property
    def week_since(self) -> datetime:
        return self.hours[0]


def windows(now: datetime | None = None) -> Windows:
    """The windows ending now. The hour is cut in the current time zone (a zone half an
    hour off UTC has its hours begin at :30 UTC) and stepped in UTC, so that a change
    to or from summer time neither skips nor repeats an hour."""
    now = now or timezone.now()
    local = timezone.localtime(now)
    current = local.replace(minute=0, second=0, microsecond=0).astimezone(UTC)
    hours = [current - timedelta(hours=n) for n in range(HOURS_IN_WEEK - 1, -1, -1)]
    return Windows(now=now, hours=hours)


# -- counts by state -----------------------------------------------------------------------

# What each count counts: None is every row of the window.
MESSAGE_COUNTS: dict[str, Q | None] = {
    "received": None,
    "ignored": Q(status=Msg.IGNORED),
    "retrying": Q(status=Msg.RETRYABLE),
    "failed": Q(status=Msg.FAILED),
    "rejected": Q(status=Msg.REJECTED),
}
IMPORT_COUNTS: dict[str, Q | None] = {
    "succeeded": Q(status=Imp.SUCCEEDED),
    "partial": Q(status=Imp.PARTIAL),
    "failed": Q(status=Imp.FAILED),
    "in_progress": Q(status__in=[Imp.PENDING, Imp.RUNNING]),
    # Read and waiting for an operator to approve or reject (pricefeed.catalogue).
    "held": Q(review=PriceImport.Review.HELD),
}
NOTIFICATION_COUNTS: dict[str, Q | None] = {
    "pending": Q(status=Note.PENDING),
    "failed": Q(status=Note.FAILED),
}
# Which time each kind of row is counted by (and what the admin links filter on).
MESSAGE_TIME = "received_at"
IMPORT_TIME = "created_at"
NOTIFICATION_TIME = "created_at"

FINISHED_IMPORTS = (Imp.SUCCEEDED, Imp.PARTIAL, Imp.FAILED)


def hourly_counts(
    rows: QuerySet, *, time: str, since: datetime, counts: Mapping[str, Q | None]
) -> dict[datetime, dict[str, int]]:
    """``rows`` from ``since`` on, counted per hour of ``time`` (cut in the current time
    zone) and per entry of ``counts``: one GROUP BY. Hours without rows are missing."""
    found = (
        rows.filter(**{f"{time}__gte": since})
        .annotate(hour=TruncHour(time, tzinfo=timezone.get_current_timezone()))
        .order_by()
        .values("hour")
        .annotate(**{name: Count("pk", filter=where) for name, where in counts.items()})
    )
    return {row["hour"].astimezone(UTC): {name: row[name] for name in counts} for row in found}


def messages_by_hour(since: datetime) -> dict[datetime, dict[str, int]]:
    """Inbound messages by the hour they arrived: all of them, and those ignored,
    retrying, failed and rejected now."""
    return hourly_counts(
        InboundMessage.objects.all(), time=MESSAGE_TIME, since=since, counts=MESSAGE_COUNTS
    )


def imports_by_hour(since: datetime) -> dict[datetime, dict[str, int]]:
    """Price imports by the hour they were made: succeeded, partial, failed and still in
    progress (pending or running) now."""
    return hourly_counts(
        PriceImport.objects.all(), time=IMPORT_TIME, since=since, counts=IMPORT_COUNTS
    )


def notifications_in_windows(
    since: Mapping[str, datetime],
) -> dict[str, dict[str, int]]:
    """Notifications made since each of ``since`` (a window's name and its start), by
    NOTIFICATION_COUNTS: one aggregate."""
    earliest = min(since.values())
    found = Notification.objects.filter(**{f"{NOTIFICATION_TIME}__gte": earliest}).aggregate(
        **{
            f"{name}__{window}": Count(
                "pk",
                filter=Q(**{f"{NOTIFICATION_TIME}__gte": start}) & (where or Q()),
            )
            for window, start in since.items()
            for name, where in NOTIFICATION_COUNTS.items()
        }
    )
    return {
        window: {name: found[f"{name}__{window}"] for name in NOTIFICATION_COUNTS}
        for window in since
    }


def totals(
    by_hour: Mapping[datetime, Mapping[str, int]], *, since: datetime, names: Sequence[str]
) -> dict[str, int]:
    """The hourly counts of ``by_hour`` added up from ``since`` on."""
    summed = dict.fromkeys(names, 0)
    for hour, counts in by_hour.items():
        if hour >= since:
            for name in names:
                summed[name] += counts[name]
    return summed


# -- from arrival to import finished -------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    """How long imports of one hour took from their message's arrival to their end."""

    p50: float  # seconds
    p95: float
    imports: int


def arrival_to_finished_by_hour(since: datetime) -> dict[datetime, Latency]:
    """Finished imports made from ``since`` on, per hour they were made (cut in the
    current time zone): the median and 95th percentile of the time from their message's
    ``received_at`` (recorded by ``listen_mail``) to their ``finished_at``.
    One GROUP BY with ``percentile_cont``.
    """
    finished = PriceImport.objects.filter(
        **{f"{IMPORT_TIME}__gte": since},
        status__in=FINISHED_IMPORTS,
        finished_at__isnull=False,
    )
    hour = TruncHour(IMPORT_TIME, tzinfo=timezone.get_current_timezone())
    took = ExpressionWrapper(F("finished_at") - F("message__received_at"), DurationField())
    rows = (
        finished.annotate(hour=hour)
        .order_by()
        .values("hour")
        .annotate(
            p50=PercentileCont(took, 0.5),
            p95=PercentileCont(took, 0.95),
            n=Count("pk"),
        )
    )
    return {
        row["hour"].astimezone(UTC): Latency(
            p50=_seconds(row["p50"]), p95=_seconds(row["p95"]), imports=row["n"]
        )
        for row in rows
    }


def _seconds(duration: timedelta | None) -> float:
    # A clock step between listen_mail's host and the worker's can make one negative.
    return max(0.0, duration.total_seconds()) if duration is not None else 0.0
