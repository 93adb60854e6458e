"""Reading the price domain for other apps, and for monitoring (``pricefeed_status``)."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from core.backlog import WorkSummary, work_summary

from .imports.lifecycle import IMPORT_WORK
from .models import PriceListConfig


def enabled_configs_count(mailbox: str = "") -> Subquery:
    """The number of enabled configs of a mailbox, in SQL; ``mailbox`` is the path to the
    mailbox from the queried model ("" for Mailbox itself). A mailbox's default
    balancing weight (see mailboxes.weights)."""
    prefix = f"{mailbox}__" if mailbox else ""
    return Subquery(
        PriceListConfig.objects.filter(mailbox=OuterRef(f"{prefix}pk"), enabled=True)
        .order_by()
        .values("mailbox")
        .annotate(n=Count("pk"))
        .values("n")
    )


def imports_summary() -> WorkSummary:
    """Price imports by status; stuck: RUNNING for longer than
    ``PRICEFEED_PROCESSING_CLAIM_TIMEOUT``, or PENDING and due (since it was created, or
    since its next attempt's time) for longer than ``PRICEFEED_REQUEUE_AFTER`` without
    a worker taking it."""
    return work_summary(
        IMPORT_WORK,
        claim_timeout=settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT,
        overdue_after=settings.PRICEFEED_REQUEUE_AFTER,
        due_since=Coalesce("next_attempt_at", "created_at"),
    )
