"""Events out to other systems: the fan-out into deliveries, and their one send path.

An event of a delivered kind (``delivery.kinds.EventKind``) fans out (``fan_out``) into
one Delivery per enabled endpoint subscribed to its kind — unique per (event, endpoint)
— and one send event each (``delivery.webhook``, ``delivery.amqp``), in one
transaction: a fan-out run again (its event retried after that transaction committed)
makes nothing twice. A send event's batch goes out over one connection per endpoint
server (``webhooks.post_all``, ``amqp.publish_all``); its results are recorded on the
deliveries (SENT in one UPDATE, each failure on its own, FAILED past the outbox's last
attempt), and the outbox retries the send events that failed, with its backoff, limit,
FAILED and alert. A crash between the endpoint's acceptance and that record delivers the
event again on retry, with the same id (at least once, never a different message).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F, TextField
from django.db.models.functions import Cast, Now

from core import metrics
from core.faults import crash_point
from core.retry import outbox_retry_policy
from core.texts import Text, error_text, stored
from outbox import services as outbox
from outbox.models import OutboxEvent, time_ordered_uuid
from outbox.services import publish_many

from . import amqp, signing, webhooks
from .endpoints import amqp_address, webhook_address
from .exceptions import DeliveryError, EndpointNotAllowed
from .kinds import SEND_AMQP, SEND_WEBHOOK
from .models import AmqpTarget, Delivery, Webhook
from .texts import NO_EVENT, NOT_ALLOWED

logger = logging.getLogger(__name__)

Status = Delivery.Status
Results = dict[uuid.UUID, BaseException | None]

# The deliveries of a fan-out in one statement, its rows as arrays (event ids, kinds,
# webhook ids, RabbitMQ target ids, send event ids); a row that exists already (unique
# per event and endpoint) is skipped. Returns (id, send_event) of each row it made.
MAKE_DELIVERIES = f"""
INSERT INTO {Delivery._meta.db_table}
    (event_id, event_kind, webhook_id, amqp_target_id, send_event, status, attempts,
     last_error, last_error_text, created_at)
SELECT d.event_id, d.kind, d.webhook_id, d.amqp_target_id, d.send_event,
       '{Delivery.Status.PENDING.value}', 0, '', '{{}}'::jsonb, now()
FROM unnest(%s::uuid[], %s::text[], %s::int[], %s::int[], %s::uuid[])
     AS d (event_id, kind, webhook_id, amqp_target_id, send_event)
ON CONFLICT DO NOTHING
RETURNING id, send_event
"""

# -- the fan-out --------------------------------------------------------------------------


def fan_out(events: Sequence[OutboxEvent]) -> int:
    """The deliveries of ``events`` to every enabled endpoint subscribed to their kind,
    and a send event for each one made now, in one transaction. Returns how many send
    events were published.

    Each delivery is made with the id of its send event (``send_event``, chosen here), in
    one INSERT that skips those already made (unique per event and endpoint); the send
    events of the rows that statement made — found by those ids — are published in one
    more. Run again (its event retried after this committed), it makes nothing: no
    delivery, no send event. Two runs at once: the second waits on the first's rows in
    the unique index, then skips them."""
    if not events:
        return 0
    kinds = sorted({event.kind for event in events})
    hooks = list(Webhook.objects.filter(enabled=True, kinds__overlap=kinds).only("pk", "kinds"))
    targets = list(
        AmqpTarget.objects.filter(enabled=True, kinds__overlap=kinds).only("pk", "kinds")
    )
    wanted = [
        (event.id, event.kind, field, endpoint.pk, time_ordered_uuid())
        for event in events
        for field, endpoints in (("webhook", hooks), ("amqp_target", targets))
        for endpoint in endpoints
        if event.kind in endpoint.kinds
    ]
    if not wanted:
        return 0
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                MAKE_DELIVERIES,
                [
                    [w[0] for w in wanted],
                    [w[1] for w in wanted],
                    [w[3] if w[2] == "webhook" else None for w in wanted],
                    [w[3] if w[2] == "amqp_target" else None for w in wanted],
                    [w[4] for w in wanted],
                ],
            )
            # The rows this INSERT made, by their send event's id (the others existed).
            made = dict((send_event, pk) for pk, send_event in cursor.fetchall())
        published = 0
        for send, field in ((SEND_WEBHOOK, "webhook"), (SEND_AMQP, "amqp_target")):
            published += publish_many(
                send,
                [
                    (Delivery(pk=made[send_event]), {"event_id": str(event_id)}, send_event)
                    for event_id, _kind, of, _endpoint, send_event in wanted
                    if of == field and send_event in made
                ],
            )
    return published


# -- what is sent ------------------------------------------------------------------------


def envelope(event_id: uuid.UUID, kind: str, created_at: Any, payload: Any) -> bytes:
    """The body of a webhook request and of an AMQP message: the event's id, kind, the
    time it was published (ISO 8601, UTC) and its payload, as UTF-8 JSON."""
    return envelope_of_json(
        event_id, kind, created_at, json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    )


def envelope_of_json(event_id: uuid.UUID, kind: str, created_at: Any, payload: str) -> bytes:
    """``envelope`` with the payload as JSON text already (as PostgreSQL gives a jsonb
    column as text): the send path passes it on as it is, never decoding it only to
    encode it again."""
    head = json.dumps(
        {"id": str(event_id), "kind": kind, "created_at": created_at.isoformat()},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return f'{head[:-1]},"payload":{payload}}}'.encode()


def webhook_headers(*, event_id: str, secret: str, body: bytes, timestamp: int) -> dict[str, str]:
    """The headers of a webhook request (docs/delivery.md)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "pricefeed-delivery/1",
        "Idempotency-Key": event_id,
        "X-Pricefeed-Event-Id": event_id,
        "X-Pricefeed-Timestamp": str(timestamp),
        "X-Pricefeed-Signature": signing.signature(secret, timestamp, body),
    }


def _load(events: Sequence[OutboxEvent], related: str) -> tuple[dict, dict, Results]:
    """The pending deliveries of a batch of send events (by send event id) and the
    envelope of each original event (by its id); results already known (a delivery gone
    or SENT: nothing to do; its event gone from the outbox: an error)."""
    rows = {
        d.send_event: d
        for d in Delivery.objects.only(
            "event_id", "event_kind", "status", "send_event", f"{related}_id"
        ).filter(send_event__in=[event.id for event in events])
    }
    # Each endpoint once (its secret decrypted once), not once per delivery.
    model: type[Webhook | AmqpTarget] = Webhook if related == "webhook" else AmqpTarget
    endpoints = model._default_manager.in_bulk({getattr(d, f"{related}_id") for d in rows.values()})
    for send_event, row in list(rows.items()):
        endpoint = endpoints.get(getattr(row, f"{related}_id"))
        if endpoint is None:  # deleted since, and its deliveries with it
            del rows[send_event]
        else:
            setattr(row, related, endpoint)
    originals = {
        pk: envelope_of_json(pk, kind, created_at, payload)
        for pk, kind, created_at, payload in OutboxEvent.objects.filter(
            pk__in={d.event_id for d in rows.values()}
        ).values_list("id", "kind", "created_at", Cast("payload", TextField()))
    }
    pending: dict[uuid.UUID, Delivery] = {}
    results: Results = {}
    for event in events:
        event_id = event.id
        delivery = rows.get(event_id)
        if delivery is None or delivery.status == Status.SENT:
            results[event_id] = None  # gone, or took effect already
        elif delivery.event_id not in originals:
            results[event_id] = DeliveryError(Text(NO_EVENT, event=str(delivery.event_id)))
        else:
            pending[event_id] = delivery
    return pending, originals, results


def _not_allowed(exc: ValidationError) -> EndpointNotAllowed:
    return EndpointNotAllowed(Text(NOT_ALLOWED, detail="; ".join(map(str, exc.messages))))


def send_webhooks(events: list[OutboxEvent]) -> Results:
    """Sends a batch of ``delivery.webhook`` events; per event, None when the webhook
    answered 2xx (or the delivery had taken effect already)."""
    pending, originals, results = _load(events, "webhook")
    timestamp = int(time.time())
    requests = []
    addresses: dict[int, Any] = {}
    for event_id, delivery in pending.items():
        hook = delivery.webhook
        assert hook is not None
        if hook.pk not in addresses:
            try:
                addresses[hook.pk] = webhook_address(hook.url)
            except ValidationError as exc:
                addresses[hook.pk] = _not_allowed(exc)
        address = addresses[hook.pk]
        if isinstance(address, EndpointNotAllowed):
            results[event_id] = address
            continue
        body = originals[delivery.event_id]
        headers = webhook_headers(
            event_id=str(delivery.event_id), secret=hook.secret, body=body, timestamp=timestamp
        )
        requests.append(webhooks.Request(event_id, address, body, headers))
    results.update(webhooks.post_all(requests, timeout=settings.PRICEFEED_DELIVERY_TIMEOUT))
    crash_point("delivery_after_send")
    _record(events, pending, results, channel="webhook")
    return results


def send_amqp(events: list[OutboxEvent]) -> Results:
    """Publishes a batch of ``delivery.amqp`` events; per event, None once RabbitMQ
    confirmed the message (or the delivery had taken effect already)."""
    pending, originals, results = _load(events, "amqp_target")
    timestamp = int(time.time())
    messages = []
    addresses: dict[int, Any] = {}
    for event_id, delivery in pending.items():
        target = delivery.amqp_target
        assert target is not None
        if target.pk not in addresses:
            try:
                addresses[target.pk] = amqp_address(target.url)
            except ValidationError as exc:
                addresses[target.pk] = _not_allowed(exc)
        address = addresses[target.pk]
        if isinstance(address, EndpointNotAllowed):
            results[event_id] = address
            continue
        messages.append(
            amqp.Message(
                key=event_id,
                target=amqp.Target(address, target.password, target.exchange),
                routing_key=target.routing_key or delivery.event_kind,
                body=originals[delivery.event_id],
                message_id=str(delivery.event_id),
                type=delivery.event_kind,
                timestamp=timestamp,
            )
        )
    results.update(amqp.publish_all(messages, timeout=settings.PRICEFEED_DELIVERY_TIMEOUT))
    crash_point("delivery_after_send")
    _record(events, pending, results, channel="amqp")
    return results


def _record(
    events: list[OutboxEvent],
    pending: dict[uuid.UUID, Delivery],
    results: Results,
    *,
    channel: str,
) -> None:
    """The batch's outcomes on its deliveries: those that took effect SENT in one
    UPDATE; each failure one more attempt and its reason, FAILED past the outbox's last
    attempt (its send event fails with it)."""
    done = [d.pk for event_id, d in pending.items() if results.get(event_id) is None]
    if done:
        sent = Delivery.objects.filter(pk__in=done, status=Status.PENDING).update(
            status=Status.SENT,
            sent_at=Now(),
            attempts=F("attempts") + 1,
            **stored("last_error", ""),
        )
        metrics.DELIVERIES_SENT.labels(channel).inc(sent)
    last_attempt = outbox_retry_policy().max_attempts
    attempts = {event.id: event.attempts for event in events}
    for event_id, delivery in pending.items():
        error = results.get(event_id)
        if error is None:
            continue
        given_up = attempts[event_id] >= last_attempt
        reason = error_text(error)
        Delivery.objects.filter(pk=delivery.pk, status=Status.PENDING).update(
            attempts=F("attempts") + 1,
            **stored("last_error", reason, limit=2000),
            **({"status": Status.FAILED} if given_up else {}),
        )
        logger.warning(
            "delivery failed delivery_id=%s event_id=%s channel=%s attempt=%s: %s",
            delivery.pk,
            delivery.event_id,
            channel,
            attempts[event_id],
            reason,
            extra={"action": "delivery_failed", "event_id": str(delivery.event_id)},
        )
        metrics.DELIVERY_ERRORS.labels(channel).inc()
        if given_up:
            metrics.DELIVERIES_FAILED.labels(channel).inc()


# -- operator actions --------------------------------------------------------------------


@transaction.atomic
def deliveries_retry_now(*, delivery_ids: Sequence[int]) -> int:
    """Operator action: deliveries waiting for a retry are due now; FAILED ones start
    over (their send events requeued, attempts reset) and are PENDING again. Returns how
    many of them will be sent now."""
    rows = list(
        Delivery.objects.filter(pk__in=list(delivery_ids), send_event__isnull=False)
        .exclude(status=Status.SENT)
        .values_list("pk", "send_event")
    )
    events = dict(
        OutboxEvent.objects.filter(pk__in=[event for _pk, event in rows]).values_list(
            "id", "status"
        )
    )
    waiting = [e for e, status in events.items() if status == OutboxEvent.Status.NEW]
    failed = [e for e, status in events.items() if status == OutboxEvent.Status.FAILED]
    moved = outbox.events_retry_now(event_ids=waiting)
    outbox.events_requeue(event_ids=failed)
    # A row a worker claimed in between is not requeued (the UPDATE checks the status).
    requeued = set(
        OutboxEvent.objects.filter(
            id__in=failed, status=OutboxEvent.Status.NEW, attempts=0
        ).values_list("id", flat=True)
    )
    Delivery.objects.filter(send_event__in=requeued, status=Status.FAILED).update(
        status=Status.PENDING
    )
    return moved + len(requeued)
