"""The fan-out into deliveries and the send paths, against a real HTTP receiver and the
real RabbitMQ; the outbox driven by its own services."""

from __future__ import annotations

import json
import time

import pytest
from django.db import transaction

from core import metrics
from delivery import selectors, services
from delivery.kinds import SEND_AMQP, SEND_WEBHOOK, EventKind
from delivery.models import AmqpTarget, Delivery, Webhook
from delivery.signing import verify
from outbox import services as outbox
from outbox.models import OutboxEvent
from outbox.services import publish

from .support import SECRET

Status = Delivery.Status


def _publish(kind: str, aggregate, count: int = 1, **payload) -> list[OutboxEvent]:
    with transaction.atomic():
        return [publish(kind, aggregate, {"n": n, **payload}) for n in range(count)]


def _drain() -> None:
    """Runs the outbox until nothing is due (retries with a zero backoff included)."""
    while ids := outbox.events_claim(dispatcher="d", limit=100):
        outbox.events_deliver(event_ids=ids, dispatcher="d")


@pytest.fixture
def hook(db, receiver) -> Webhook:
    return Webhook.objects.create(
        name="shop", url=receiver.url, secret=SECRET, kinds=[EventKind.PRICE_CHANGED]
    )


def test_an_event_reaches_the_webhook_signed_with_its_id(hook, receiver):
    (event,) = _publish(EventKind.PRICE_CHANGED, hook, version=7)
    _drain()

    (request,) = receiver.received
    headers = request.headers
    body = json.loads(request.body)
    assert body["id"] == str(event.id)
    assert body["kind"] == "price.changed"
    assert body["payload"] == {"n": 0, "version": 7}
    assert body["created_at"].startswith(str(event.created_at.year))
    assert headers["Idempotency-Key"] == headers["X-Pricefeed-Event-Id"] == str(event.id)
    assert headers["Content-Type"] == "application/json"
    assert verify(
        SECRET, headers["X-Pricefeed-Timestamp"], request.body, headers["X-Pricefeed-Signature"]
    )
    assert abs(int(headers["X-Pricefeed-Timestamp"]) - time.time()) < 60
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.event_id) == (Status.SENT, 1, event.id)
    assert delivery.sent_at is not None
    assert set(OutboxEvent.objects.values_list("status", flat=True)) == {OutboxEvent.Status.SENT}


def test_a_batch_to_one_host_goes_over_one_connection(hook, receiver):
    _publish(EventKind.PRICE_CHANGED, hook, count=30)
    _drain()
    assert len(receiver.received) == 30
    assert {r.connection for r in receiver.received} == {1}
    assert len({r.headers["X-Pricefeed-Event-Id"] for r in receiver.received}) == 30


def test_only_enabled_endpoints_subscribed_to_the_kind_get_it(hook, receiver):
    Webhook.objects.create(
        name="off", url=receiver.url, secret=SECRET, kinds=[EventKind.PRICE_CHANGED], enabled=False
    )
    Webhook.objects.create(
        name="offers", url=receiver.url, secret=SECRET, kinds=[EventKind.OFFER_CHANGED]
    )
    _publish(EventKind.PRICE_CHANGED, hook)
    _drain()
    assert list(Delivery.objects.values_list("webhook__name", flat=True)) == ["shop"]
    assert len(receiver.received) == 1


def test_a_fan_out_run_again_makes_no_second_delivery_or_send_event(hook):
    events = _publish(EventKind.PRICE_CHANGED, hook, count=3)
    assert services.fan_out(events) == 3
    assert services.fan_out(events) == 0
    assert Delivery.objects.count() == 3
    assert OutboxEvent.objects.filter(kind=SEND_WEBHOOK).count() == 3
    sends = set(OutboxEvent.objects.filter(kind=SEND_WEBHOOK).values_list("id", flat=True))
    assert set(Delivery.objects.values_list("send_event", flat=True)) == sends


def test_a_refusing_webhook_is_retried_and_fails_at_the_limit(hook, receiver, settings):
    settings.PRICEFEED_OUTBOX_RETRY_BASE = 0
    settings.PRICEFEED_OUTBOX_RETRY_MAX = 0
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 3
    receiver.statuses = [503, 500, 429]
    failed_before = metrics.DELIVERIES_FAILED.labels("webhook")._value.get()
    (event,) = _publish(EventKind.PRICE_CHANGED, hook)
    _drain()

    assert len(receiver.received) == 3
    # The same event id every time.
    assert {r.headers["X-Pricefeed-Event-Id"] for r in receiver.received} == {str(event.id)}
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Status.FAILED, 3)
    assert delivery.last_error == "the webhook answered HTTP 429: try again later"
    send = OutboxEvent.objects.get(kind=SEND_WEBHOOK)
    assert (send.status, send.attempts) == (OutboxEvent.Status.FAILED, 3)
    assert metrics.DELIVERIES_FAILED.labels("webhook")._value.get() == failed_before + 1
    assert selectors.failing_count() == 1


def test_a_refusal_then_an_acceptance_is_sent(hook, receiver, settings):
    settings.PRICEFEED_OUTBOX_RETRY_BASE = 0
    settings.PRICEFEED_OUTBOX_RETRY_MAX = 0
    receiver.statuses = [500]
    _publish(EventKind.PRICE_CHANGED, hook)
    services.fan_out(list(OutboxEvent.objects.filter(kind=EventKind.PRICE_CHANGED)))
    ids = outbox.events_claim(dispatcher="d", limit=100)
    outbox.events_deliver(event_ids=ids, dispatcher="d")

    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Status.PENDING, 1)
    assert selectors.failing_count() == 1
    _drain()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == (Status.SENT, 2, "")
    assert selectors.failing_count() == 0


def test_a_redirect_is_not_followed(hook, receiver, settings):
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    receiver.statuses = [302]
    _publish(EventKind.PRICE_CHANGED, hook)
    _drain()
    assert len(receiver.received) == 1
    assert Delivery.objects.get().status == Status.FAILED


def test_an_unreachable_webhook_fails_with_the_reason(db, settings):
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    from devkit.servers import free_port

    hook = Webhook.objects.create(
        name="gone",
        url=f"http://127.0.0.1:{free_port()}/x",
        secret=SECRET,
        kinds=[EventKind.IMPORT_FINISHED],
    )
    _publish(EventKind.IMPORT_FINISHED, hook, count=5)
    _drain()
    assert set(Delivery.objects.values_list("status", flat=True)) == {Status.FAILED}
    assert "the webhook could not be reached: ConnectionRefusedError" in (
        Delivery.objects.first().last_error
    )


def test_plain_http_is_refused_unless_allowed(hook, receiver, settings):
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = False
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    _publish(EventKind.PRICE_CHANGED, hook)
    _drain()
    assert not receiver.received
    delivery = Delivery.objects.get()
    assert delivery.status == Status.FAILED
    assert delivery.last_error.startswith("the endpoint's address is not allowed")


def test_an_event_reaches_rabbitmq_persistent_with_its_id(db, rabbit):
    target = AmqpTarget.objects.create(
        name="bus",
        url=rabbit.url,
        password=rabbit.password,
        exchange=rabbit.exchange,
        kinds=[EventKind.OFFER_CHANGED, EventKind.IMPORT_FINISHED],
    )
    offer, finished = (
        _publish(EventKind.OFFER_CHANGED, target)[0],
        _publish(EventKind.IMPORT_FINISHED, target, import_id=5)[0],
    )
    _drain()

    got = {props.message_id: (props, json.loads(body)) for props, body in rabbit.messages(2)}
    assert set(got) == {str(offer.id), str(finished.id)}
    props, body = got[str(finished.id)]
    assert props.type == "import.finished"
    assert props.delivery_mode == 2
    assert props.content_type == "application/json"
    assert abs(props.timestamp - time.time()) < 60
    assert body["id"] == str(finished.id)
    assert body["payload"] == {"n": 0, "import_id": 5}
    assert set(Delivery.objects.values_list("status", flat=True)) == {Status.SENT}
    assert OutboxEvent.objects.filter(kind=SEND_AMQP, status=OutboxEvent.Status.SENT).count() == 2
    assert not rabbit.messages(1, timeout=0.5)  # nothing else


def test_the_routing_key_is_the_kind_unless_set(db, rabbit):
    rabbit.channel.queue_unbind(rabbit.queue, rabbit.exchange, routing_key="#")
    rabbit.channel.queue_bind(rabbit.queue, rabbit.exchange, routing_key="price.changed")
    target = AmqpTarget.objects.create(
        name="bus",
        url=rabbit.url,
        password=rabbit.password,
        exchange=rabbit.exchange,
        kinds=[EventKind.PRICE_CHANGED],
    )
    (event,) = _publish(EventKind.PRICE_CHANGED, target)
    _drain()
    ((props, _body),) = rabbit.messages(1)
    assert props.message_id == str(event.id)


def test_a_message_no_queue_takes_is_retried_and_fails(db, rabbit, settings):
    settings.PRICEFEED_OUTBOX_RETRY_BASE = 0
    settings.PRICEFEED_OUTBOX_RETRY_MAX = 0
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 2
    target = AmqpTarget.objects.create(
        name="bus",
        url=rabbit.url,
        password=rabbit.password,
        exchange=rabbit.exchange,
        routing_key="nobody.listens",
        kinds=[EventKind.PRICE_CHANGED],
    )
    rabbit.channel.queue_unbind(rabbit.queue, rabbit.exchange, routing_key="#")
    _publish(EventKind.PRICE_CHANGED, target)
    _drain()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Status.FAILED, 2)
    assert "no queue is bound for routing key nobody.listens" in delivery.last_error


def test_a_wrong_password_or_a_missing_exchange_is_retried(db, rabbit, settings):
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    wrong = AmqpTarget.objects.create(
        name="wrong",
        url=rabbit.url,
        password="not-the-password",
        exchange=rabbit.exchange,
        kinds=[EventKind.PRICE_CHANGED],
    )
    missing = AmqpTarget.objects.create(
        name="missing",
        url=rabbit.url,
        password=rabbit.password,
        exchange=rabbit.exchange + "-missing",
        kinds=[EventKind.PRICE_CHANGED],
    )
    _publish(EventKind.PRICE_CHANGED, wrong)
    _drain()
    errors = dict(Delivery.objects.values_list("amqp_target", "last_error"))
    assert errors[wrong.pk].startswith("RabbitMQ could not be reached")
    assert errors[missing.pk].startswith("RabbitMQ closed the channel")
    assert set(Delivery.objects.values_list("status", flat=True)) == {Status.FAILED}


def test_retry_now_requeues_a_failed_delivery(hook, receiver, settings):
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    receiver.statuses = [500]
    _publish(EventKind.PRICE_CHANGED, hook)
    _drain()
    delivery = Delivery.objects.get()
    assert delivery.status == Status.FAILED

    assert services.deliveries_retry_now(delivery_ids=[delivery.pk]) == 1
    delivery.refresh_from_db()
    assert delivery.status == Status.PENDING
    _drain()
    delivery.refresh_from_db()
    assert delivery.status == Status.SENT
    assert len(receiver.received) == 2
    assert services.deliveries_retry_now(delivery_ids=[delivery.pk]) == 0


def test_a_webhook_deleted_before_its_send_sends_nothing_and_ends_the_send(hook, receiver):
    events = _publish(EventKind.PRICE_CHANGED, hook, count=2)
    services.fan_out(events)
    OutboxEvent.objects.filter(kind=EventKind.PRICE_CHANGED).update(status=OutboxEvent.Status.SENT)
    hook.delete()  # its deliveries go with it
    _drain()
    assert not receiver.received
    sends = OutboxEvent.objects.filter(kind=SEND_WEBHOOK)
    assert set(sends.values_list("status", flat=True)) == {OutboxEvent.Status.SENT}
