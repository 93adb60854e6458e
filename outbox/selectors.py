"""Reading the outbox, for monitoring (``pricefeed_status``) and the admin's filters."""

from __future__ import annotations

from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Now

from core.backlog import WorkSummary, work_summary
from core.dbtime import db_now_minus

from .models import OutboxEvent
from .services import EVENT_WORK


def events_summary() -> WorkSummary:
    """Outbox events by status; the backlog is the NEW ones (due or backing off); stuck:
    PROCESSING, or NEW and due, for longer than ``PRICEFEED_OUTBOX_CLAIM_TIMEOUT`` (a
    running ``dispatch_outbox`` claims a due event within seconds)."""
    timeout = settings.PRICEFEED_OUTBOX_CLAIM_TIMEOUT
    return work_summary(
        EVENT_WORK, claim_timeout=timeout, overdue_after=timeout, due_since=F("next_attempt_at")
    )


WAITING_STATES = ("due", "backing_off", "stuck")


def events_waiting(rows: QuerySet[OutboxEvent], state: str) -> QuerySet[OutboxEvent]:
    """The events of ``rows`` that ``events_summary`` counts as ``due`` (NEW, its
    attempt time come), ``backing_off`` (NEW, its attempt time to come) or ``stuck``
    (claimed, or due, for longer than the claim timeout), by database time."""
    timeout = settings.PRICEFEED_OUTBOX_CLAIM_TIMEOUT
    new = Q(status=OutboxEvent.Status.NEW)
    if state == "due":
        return rows.filter(new, next_attempt_at__lte=Now())
    if state == "backing_off":
        return rows.filter(new, next_attempt_at__gt=Now())
    if state == "stuck":
        return rows.filter(
            EVENT_WORK.claim_expired(claim_timeout=timeout)
            | (new & Q(next_attempt_at__lt=db_now_minus(timeout)))
        )
    raise ValueError(f"no waiting state {state!r}")
