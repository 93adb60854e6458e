"""Reading notifications: for monitoring (``pricefeed_status``) and the admin."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db.models import Count, JSONField, OuterRef, QuerySet, Subquery

from outbox.models import OutboxEvent

from .models import Notification
from .services import notification_ids as notification_ids_of


def notifications_by_status() -> dict[str, int]:
    """How many notifications are in each status (every status named, 0 where none)."""
    found = dict(Notification.objects.order_by().values_list("status").annotate(n=Count("pk")))
    counts = {str(status): found.pop(status, 0) for status in Notification.Status.values}
    counts.update({str(status): n for status, n in found.items()})
    return counts


# -- the send events of notifications (the outbox rows that deliver them) ---------------


def notifications_with_send_event(rows: QuerySet[Notification]) -> QuerySet[Notification]:
    """``rows`` with the status (``send_status``), the next attempt
    (``send_next_attempt_at``) and the last error (``send_error``, its stored form
    ``send_error_text``) of the send event that delivers each: in the same query, one
    primary-key lookup each."""
    event = OutboxEvent.objects.filter(pk=OuterRef("send_event"))
    return rows.annotate(
        send_status=Subquery(event.values("status")[:1]),
        send_next_attempt_at=Subquery(event.values("next_attempt_at")[:1]),
        send_error=Subquery(event.values("last_error")[:1]),
        send_error_text=Subquery(event.values("last_error_text")[:1], output_field=JSONField()),
    )


def send_events_of(notification_ids: Iterable[int]) -> dict[uuid.UUID, list[int]]:
    """The send events that deliver any of ``notification_ids``, each with every
    notification it delivers (a digest's: those selected and the others)."""
    events = Notification.objects.filter(
        pk__in=set(notification_ids), send_event__isnull=False
    ).values("send_event")
    return {
        event_id: notification_ids_of(payload)
        for event_id, payload in OutboxEvent.objects.filter(pk__in=events).values_list(
            "id", "payload"
        )
    }
