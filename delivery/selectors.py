"""Reading deliveries: for the console's front page and monitoring."""

from __future__ import annotations

from django.db.models import Count, Q

from .models import Delivery

# Deliveries FAILED, or PENDING after at least one failed attempt (being retried).
FAILING = Q(status=Delivery.Status.FAILED) | Q(status=Delivery.Status.PENDING, attempts__gt=0)


def failing_count() -> int:
    """How many deliveries are failing (FAILING)."""
    return Delivery.objects.filter(FAILING).count()


def deliveries_by_status() -> dict[str, int]:
    """How many deliveries are in each status (every status named, 0 where none)."""
    found = dict(Delivery.objects.order_by().values_list("status").annotate(n=Count("pk")))
    return {str(status): found.get(status, 0) for status in Delivery.Status.values}
