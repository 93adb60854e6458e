"""Reading inbound mail for other apps: the stored bytes of a message; and who listens
where and how the messages stand, for the admin and monitoring (``pricefeed_status``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import (
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce, Now

from core.adminutils import annotated
from core.backlog import WorkSummary, work_summary
from core.dbtime import db_now_minus

from . import sql
from .exceptions import RawMessageMissing
from .models import InstanceHeartbeat, Mailbox, MailboxLease
from .processing import MESSAGE_WORK
from .weights import listened_to


def message_raw(message_id: int) -> bytes:
    """The stored raw message, read in binary: the ORM's text
    transfer sends bytea as hex (twice the size) and took ~1.4 s for a 100 MB message.
    Raises RawMessageMissing when the message was refused unread."""
    import psycopg

    connection.ensure_connection()
    # Django's cursors bind on the client side, which cannot ask for binary results.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql.RAW_MESSAGE, [message_id], binary=True)
        row = cursor.fetchone()
    raw = row[0] if row else None
    if raw is None:
        raise RawMessageMissing("the message's raw bytes are not stored")
    return bytes(raw)


# -- who listens where -------------------------------------------------------------------


def instance_state(*, stopping: bool, seen_ago: timedelta) -> str:
    """``stopped`` (said so when it stopped), ``dead`` (no heartbeat for a lease's TTL:
    its leases can be taken over) or ``live``."""
    if stopping:
        return "stopped"
    if seen_ago.total_seconds() > settings.PRICEFEED_LIVENESS_WINDOW:
        return "dead"
    return "live"


def instances_annotate(instances: QuerySet[InstanceHeartbeat]) -> QuerySet[InstanceHeartbeat]:
    """``instances`` with ``ago`` (since the last heartbeat, database time) and
    ``n_leases`` (unexpired leases held on enabled mailboxes; None for none)."""
    held = MailboxLease.objects.filter(
        owner=OuterRef("instance_id"), expires_at__gt=Now(), mailbox__enabled=True
    ).values("owner")
    return instances.annotate(
        ago=ExpressionWrapper(Now() - F("last_seen"), DurationField()),
        n_leases=Subquery(held.annotate(n=Count("pk")).values("n")),
    )


@dataclass(frozen=True)
class InstanceView:
    instance_id: str
    host: str
    pid: int
    state: str  # live | dead | stopped (instance_state)
    last_seen: datetime
    seen_ago: float  # seconds
    leases: int


def instances_overview() -> list[InstanceView]:
    """Every ``listen_mail`` instance that has a heartbeat row, by id."""
    rows = instances_annotate(InstanceHeartbeat.objects.order_by("instance_id"))
    return [
        InstanceView(
            instance_id=row.instance_id,
            host=row.host,
            pid=row.pid,
            state=instance_state(stopping=row.stopping, seen_ago=annotated(row, "ago")),
            last_seen=row.last_seen,
            seen_ago=round(max(0.0, annotated(row, "ago").total_seconds()), 3),
            leases=annotated(row, "n_leases") or 0,
        )
        for row in rows
    ]


def lease_state(
    *, enabled: bool, owner: str, left: timedelta | None, release_requested: bool
) -> str:
    """``mailbox disabled``, ``free`` (no owner, or expired), ``release requested`` or
    ``held``; ``left`` is the time to its expiry (database time)."""
    if not enabled:
        return "mailbox disabled"
    if not owner or left is None or left.total_seconds() <= 0:
        return "free"
    return "release requested" if release_requested else "held"


def leases_annotate(rows: QuerySet[MailboxLease]) -> QuerySet[MailboxLease]:
    """``rows`` with ``left``: the time to each lease's expiry (database time; None
    when it never had one)."""
    return rows.annotate(left=ExpressionWrapper(F("expires_at") - Now(), DurationField()))


@dataclass(frozen=True)
class LeaseView:
    mailbox_id: int
    mailbox: str
    owner: str
    token: int
    state: str  # lease_state
    expires_in: float | None  # seconds; negative once expired; None when never held


def leases_overview() -> list[LeaseView]:
    """Every mailbox's lease, by mailbox name."""
    rows = leases_annotate(MailboxLease.objects.select_related("mailbox")).order_by("mailbox__name")
    views = []
    for row in rows:
        left: timedelta | None = annotated(row, "left")
        state = lease_state(
            enabled=row.mailbox.enabled,
            owner=row.owner,
            left=left,
            release_requested=row.release_requested,
        )
        expires_in = round(left.total_seconds(), 3) if left is not None and row.owner else None
        views.append(
            LeaseView(
                mailbox_id=row.mailbox_id,
                mailbox=row.mailbox.name,
                owner=row.owner,
                token=row.token,
                state=state,
                expires_in=expires_in,
            )
        )
    return views


def instances_in_state(
    rows: QuerySet[InstanceHeartbeat], state: str
) -> QuerySet[InstanceHeartbeat]:
    """The heartbeats of ``rows`` that ``instance_state`` calls ``state``, in SQL."""
    fresh = db_now_minus(settings.PRICEFEED_LIVENESS_WINDOW)
    if state == "stopped":
        return rows.filter(stopping=True)
    if state == "dead":
        return rows.filter(stopping=False, last_seen__lt=fresh)
    if state == "live":
        return rows.filter(stopping=False, last_seen__gte=fresh)
    raise ValueError(f"no instance state {state!r}")


def leases_in_state(rows: QuerySet[MailboxLease], state: str) -> QuerySet[MailboxLease]:
    """The leases of ``rows`` that ``lease_state`` calls ``state``, in SQL."""
    if state == "mailbox disabled":
        return rows.filter(mailbox__enabled=False)
    rows = rows.filter(mailbox__enabled=True)
    unexpired = Q(expires_at__gt=Now()) & ~Q(owner="")
    if state == "free":
        return rows.exclude(unexpired)
    if state == "release requested":
        return rows.filter(unexpired, release_requested=True)
    if state == "held":  # a lease whose release was asked for is held until let go
        return rows.filter(unexpired)
    raise ValueError(f"no lease state {state!r}")


def _listened() -> Exists:
    """Whether a live instance holds an unexpired lease on the mailbox (an outer row)."""
    live = InstanceHeartbeat.objects.filter(
        last_seen__gt=db_now_minus(settings.PRICEFEED_LIVENESS_WINDOW), stopping=False
    ).values("instance_id")
    return Exists(
        MailboxLease.objects.filter(
            mailbox=OuterRef("pk"), owner__in=Subquery(live), expires_at__gt=Now()
        )
    )


def mailboxes_listened(rows: QuerySet[Mailbox], listened: bool) -> QuerySet[Mailbox]:
    """The mailboxes of ``rows`` to be listened to (enabled, with an enabled config:
    ``weights.listened_to``) that a live instance listens to, or (``listened`` False)
    that none does."""
    return rows.filter(listened_to()).filter(_listened() if listened else ~_listened())


def mailboxes_unlistened() -> list[str]:
    """The names of the mailboxes to be listened to that no live instance listens to:
    none holds an unexpired lease on it with a heartbeat fresher than a lease's TTL."""
    return list(
        mailboxes_listened(Mailbox.objects.all(), False)
        .order_by("name")
        .values_list("name", flat=True)
    )


# -- how the messages stand --------------------------------------------------------------


def messages_summary() -> WorkSummary:
    """Inbound messages by status; stuck: PROCESSING for longer than
    ``PRICEFEED_PROCESSING_CLAIM_TIMEOUT``, or RECEIVED/RETRYABLE and due (since it
    arrived, or since its next attempt's time) for longer than
    ``PRICEFEED_REQUEUE_AFTER`` without a worker taking it."""
    return work_summary(
        MESSAGE_WORK,
        claim_timeout=settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT,
        overdue_after=settings.PRICEFEED_REQUEUE_AFTER,
        due_since=Coalesce("next_attempt_at", "received_at"),
    )
