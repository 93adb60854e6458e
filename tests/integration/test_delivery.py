"""Event delivery through the real processes (``dispatch_outbox``, ``qcluster``) to a
real HTTP receiver and the real RabbitMQ: every event at least once with its id, nothing
else, also when a process is killed between sending and recording the result."""

from __future__ import annotations

import json
import signal
from collections import Counter

import pytest
from django.db import transaction

from delivery.kinds import EventKind
from delivery.models import AmqpTarget, Delivery, Webhook
from delivery.signing import verify
from devkit.servers.webhook import WebhookReceiver
from outbox.models import OutboxEvent
from outbox.services import publish
from tests.delivery.support import SECRET, Rabbit

from .support import wait_until

ENV = {
    "PRICEFEED_DELIVERY_ALLOW_PLAIN": "true",
    "PRICEFEED_DELIVERY_TIMEOUT": "5",
    # A killed worker's claims come back within seconds.
    "PRICEFEED_OUTBOX_CLAIM_TIMEOUT": "3",
    "PRICEFEED_SWEEP_INTERVAL": "0.5",
    "PRICEFEED_OUTBOX_RETRY_BASE": "0.2",
    "PRICEFEED_OUTBOX_RETRY_MAX": "1",
}
KINDS = list(EventKind)


@pytest.fixture
def endpoints(transactional_db, receiver, rabbit):
    hook = Webhook.objects.create(name="shop", url=receiver.url, secret=SECRET, kinds=KINDS)
    target = AmqpTarget.objects.create(
        name="bus", url=rabbit.url, password=rabbit.password, exchange=rabbit.exchange, kinds=KINDS
    )
    return hook, target


def _publish(anchor, count: int) -> set[str]:
    with transaction.atomic():
        return {str(publish(KINDS[n % 3], anchor, {"n": n}).id) for n in range(count)}


def _check_webhook(receiver: WebhookReceiver, published: set[str]) -> Counter:
    """Every request signed, its id in its body and headers; how often each id came."""
    seen: Counter = Counter()
    for request in receiver.received:
        h = request.headers
        assert verify(SECRET, h["X-Pricefeed-Timestamp"], request.body, h["X-Pricefeed-Signature"])
        body = json.loads(request.body)
        assert body["id"] == h["X-Pricefeed-Event-Id"] == h["Idempotency-Key"]
        seen[body["id"]] += 1
    assert set(seen) == published  # every event, and nothing else
    return seen


def _check_rabbit(rabbit: Rabbit, published: set[str]) -> Counter:
    seen: Counter = Counter()
    while set(seen) != published:
        got = rabbit.messages(len(published), timeout=20)
        assert got, f"{len(published - set(seen))} event(s) never reached RabbitMQ"
        for props, body in got:
            assert props.message_id == json.loads(body)["id"]
            assert props.delivery_mode == 2
            seen[props.message_id] += 1
    assert set(seen) == published
    assert not rabbit.messages(1, timeout=1)  # nothing more
    return seen


def _all_sent() -> bool:
    return (
        Delivery.objects.exists()
        and not Delivery.objects.exclude(status=Delivery.Status.SENT).exists()
        and not OutboxEvent.objects.exclude(status=OutboxEvent.Status.SENT).exists()
    )


def test_events_reach_the_webhook_and_rabbitmq_once_each(manage, endpoints, receiver, rabbit):
    hook, _target = endpoints
    manage("qcluster", env=ENV)
    dispatcher = manage("dispatch_outbox", env=ENV)
    dispatcher.wait_for_log("dispatch_outbox started", 15)
    published = _publish(hook, 60)

    wait_until(_all_sent, 60, "every delivery SENT")
    assert Delivery.objects.count() == 120  # one per event and endpoint
    assert set(_check_webhook(receiver, published).values()) == {1}
    assert set(_check_rabbit(rabbit, published).values()) == {1}


@pytest.mark.parametrize(
    ("process", "point"),
    [("qcluster", "delivery_after_send"), ("dispatch_outbox", "outbox_after_claim")],
)
def test_a_process_killed_between_sending_and_recording_loses_nothing(
    manage, endpoints, receiver, rabbit, tmp_path, process, point
):
    hook, _target = endpoints
    published = _publish(hook, 30)
    crash = {"PRICEFEED_CRASH_AT": point, "PRICEFEED_CRASH_ONCE": str(tmp_path / "crashed")}
    if process == "qcluster":
        manage("qcluster", env={**ENV, **crash})
        manage("dispatch_outbox", env=ENV)
        # The worker dies after a send batch went out, before its result was recorded.
        wait_until((tmp_path / "crashed").exists, 60, "the worker killed at the point")
    else:
        crashing = manage("dispatch_outbox", env={**ENV, **crash})
        crashing.wait(30)
        assert crashing.process.returncode == -signal.SIGKILL
        manage("qcluster", env=ENV)
        manage("dispatch_outbox", env=ENV)

    wait_until(_all_sent, 90, "every delivery SENT after the crash")
    # Every event reached both, with its own id; whatever came twice is the same event
    # again (at least once), never another message.
    by_webhook = _check_webhook(receiver, published)
    by_rabbit = _check_rabbit(rabbit, published)
    assert Delivery.objects.count() == 60
    if process == "qcluster":
        # The batch sent before the kill was sent again: at least once, the same ids.
        assert sum(by_webhook.values()) + sum(by_rabbit.values()) > 2 * len(published)
