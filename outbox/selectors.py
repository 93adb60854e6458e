"""Reading the outbox, for monitoring (``pricefeed_status``)."""

from __future__ import annotations

from django.conf import settings
from django.db.models import F

from core.backlog import WorkSummary, work_summary

from .services import EVENT_WORK


def events_summary() -> WorkSummary:
    """Outbox events by status; the backlog is the NEW ones (due or backing off); stuck:
    PROCESSING, or NEW and due, for longer than ``PRICEFEED_OUTBOX_CLAIM_TIMEOUT`` (a
    running ``dispatch_outbox`` claims a due event within seconds)."""
    timeout = settings.PRICEFEED_OUTBOX_CLAIM_TIMEOUT
    return work_summary(
        EVENT_WORK, claim_timeout=timeout, overdue_after=timeout, due_since=F("next_attempt_at")
    )
