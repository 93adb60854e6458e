"""Reading notifications: for monitoring (``pricefeed_status``) and the admin."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db.models import (
    BooleanField,
    CharField,
    Count,
    F,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Cast

from outbox.models import OutboxEvent

from .models import Notification
from .services import SEND_EVENT
from .services import notification_ids as notification_ids_of


def notifications_by_status() -> dict[str, int]:
    """How many notifications are in each status (every status named, 0 where none)."""
    found = dict(Notification.objects.order_by().values_list("status").annotate(n=Count("pk")))
    counts = {str(status): found.pop(status, 0) for status in Notification.Status.values}
    counts.update({str(status): n for status, n in found.items()})
    return counts


# -- the send events of notifications (the outbox rows that deliver them) ---------------


def _send_events() -> QuerySet[OutboxEvent]:
    return OutboxEvent.objects.filter(
        kind=SEND_EVENT, aggregate_type=Notification._meta.label_lower
    ).order_by("-created_at")


class _ListedInDigest(Func):
    """True when the ``notification_ids`` array of a send event's payload (its first
    expression) holds the value of its second: JSON containment on PostgreSQL, a search
    of the array with ``json_each`` on SQLite (the two databases pricefeed runs on)."""

    output_field = BooleanField()

    def as_postgresql(self, compiler, connection, **extra_context):
        payload, value = (compiler.compile(e) for e in self.get_source_expressions())
        return (
            f"(({payload[0]} -> 'notification_ids') @> to_jsonb({value[0]}))",
            (*payload[1], *value[1]),
        )

    def as_sqlite(self, compiler, connection, **extra_context):
        payload, value = (compiler.compile(e) for e in self.get_source_expressions())
        return (
            f"EXISTS (SELECT 1 FROM json_each({payload[0]}, '$.notification_ids') "
            f"WHERE json_each.value = {value[0]})",
            (*payload[1], *value[1]),
        )


def _covers_outer_notification() -> Q:
    """A send event delivers the notification of the outer query: it is the event's
    aggregate (a single mail, or a digest's first notification) or one of the
    notifications its digest payload lists."""
    return Q(aggregate_id=Cast(OuterRef("pk"), CharField())) | Q(
        _ListedInDigest(F("payload"), OuterRef("pk"))
    )


def notifications_with_send_event(rows: QuerySet[Notification]) -> QuerySet[Notification]:
    """``rows`` with the status (``send_status``), the next attempt
    (``send_next_attempt_at``) and the last error (``send_error``) of the latest send
    event that delivers each: in the same query, one subquery each."""
    latest = _send_events().filter(_covers_outer_notification())
    return rows.annotate(
        send_status=Subquery(latest.values("status")[:1]),
        send_next_attempt_at=Subquery(latest.values("next_attempt_at")[:1]),
        send_error=Subquery(latest.values("last_error")[:1]),
    )


def send_events_of(notification_ids: Iterable[int]) -> dict[uuid.UUID, list[int]]:
    """The send events that deliver any of ``notification_ids``, each with every
    notification it delivers (a digest's: those selected and the others). A digest's
    event is found through its first notification, which shares the recipient and the
    message with the others: the candidates are the events of those notifications, kept
    when their payload names one of ``notification_ids``."""
    wanted = set(notification_ids)
    if not wanted:
        return {}
    selected = Notification.objects.filter(pk__in=wanted)
    siblings = Notification.objects.filter(
        recipient__in=selected.values("recipient"),
        price_import__message_id__in=selected.values("price_import__message_id"),
    ).values_list("pk", flat=True)
    found: dict[uuid.UUID, list[int]] = {}
    for event_id, payload in (
        _send_events()
        .filter(aggregate_id__in=[str(pk) for pk in siblings])
        .values_list("id", "payload")
    ):
        delivered = notification_ids_of(payload)
        if wanted.intersection(delivered):
            found[event_id] = delivered
    return found
