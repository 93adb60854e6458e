"""Reading the price domain for other apps."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Subquery

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
