"""Reading notifications, for monitoring (``pricefeed_status``)."""

from __future__ import annotations

from django.db.models import Count

from .models import Notification


def notifications_by_status() -> dict[str, int]:
    """How many notifications are in each status (every status named, 0 where none)."""
    found = dict(Notification.objects.order_by().values_list("status").annotate(n=Count("pk")))
    counts = {str(status): found.pop(status, 0) for status in Notification.Status.values}
    counts.update({str(status): n for status, n in found.items()})
    return counts
