"""The outbox's operator actions on notifications: retry now, requeue and give up,
applied to the send events that deliver them (``outbox.services``), with each
notification's own status kept in step with its event.

A requeued FAILED event delivers its notifications again: they go back to PENDING, so
that delivery marks them SENT. A given-up event will not deliver them: they become
FAILED with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import transaction

from core.texts import stored
from outbox import services as outbox
from outbox.models import OutboxEvent

from .models import Notification
from .selectors import send_events_of


def _delivered(events: dict[uuid.UUID, list[int]], event_ids: Iterable[uuid.UUID]) -> set[int]:
    return {pk for event_id in event_ids for pk in events[event_id]}


def notifications_retry_now(*, notification_ids: Iterable[int]) -> int:
    """Their send events waiting for a backoff become due now. Returns how many of the
    selected notifications are due now."""
    selected = set(notification_ids)
    events = send_events_of(selected)
    waiting = list(
        OutboxEvent.objects.filter(id__in=list(events), status=OutboxEvent.Status.NEW).values_list(
            "id", flat=True
        )
    )
    outbox.events_retry_now(event_ids=waiting)
    return len(selected & _delivered(events, waiting))


@transaction.atomic
def notifications_requeue(*, notification_ids: Iterable[int]) -> int:
    """Their FAILED send events start over (attempts reset), and every notification
    those deliver (a digest's others too: they go in the same mail) is PENDING again.
    Returns how many of the selected notifications were requeued."""
    selected = set(notification_ids)
    events = send_events_of(selected)
    failed = list(
        OutboxEvent.objects.filter(
            id__in=list(events), status=OutboxEvent.Status.FAILED
        ).values_list("id", flat=True)
    )
    outbox.events_requeue(event_ids=failed)
    # A row a worker claimed in between is not requeued (the UPDATE checks the status).
    requeued = OutboxEvent.objects.filter(
        id__in=failed, status=OutboxEvent.Status.NEW, attempts=0
    ).values_list("id", flat=True)
    delivered = _delivered(events, requeued)
    Notification.objects.filter(pk__in=delivered, status=Notification.Status.FAILED).update(
        status=Notification.Status.PENDING
    )
    return len(selected & delivered)


@transaction.atomic
def notifications_give_up(*, notification_ids: Iterable[int], reason: str) -> int:
    """Their send events still waiting (NEW) are given up, and every notification those
    would have delivered (a digest's others too) becomes FAILED with ``reason``; one
    being sent right now is left to its worker. Returns how many of the selected
    notifications were given up."""
    selected = set(notification_ids)
    events = send_events_of(selected)
    waiting = list(
        OutboxEvent.objects.filter(id__in=list(events), status=OutboxEvent.Status.NEW).values_list(
            "id", flat=True
        )
    )
    outbox.events_mark_failed(event_ids=waiting, reason=reason)
    given_up = OutboxEvent.objects.filter(
        id__in=waiting, status=OutboxEvent.Status.FAILED, last_error=reason
    ).values_list("id", flat=True)
    delivered = _delivered(events, given_up)
    Notification.objects.filter(pk__in=delivered, status=Notification.Status.PENDING).update(
        status=Notification.Status.FAILED, **stored("last_error", reason)
    )
    return len(selected & delivered)
