"""dispatch_outbox with real processes: every event handled once, crashes recovered."""

from __future__ import annotations

import signal

from django.db import transaction
from django_q.models import OrmQ, Task

from mailboxes.models import Mailbox
from outbox.dispatcher import DELIVER_TASK
from outbox.handlers import NOOP
from outbox.models import OutboxEvent
from outbox.services import publish

from .support import wait_until

Status = OutboxEvent.Status


def _publish(kind: str, count: int) -> None:
    anchor = Mailbox.objects.get_or_create(name="anchor", defaults={"host": "h", "username": "u"})[
        0
    ]
    with transaction.atomic():
        for i in range(count):
            publish(kind, anchor, {"n": i})


def _all_sent() -> bool:
    return not OutboxEvent.objects.exclude(status=Status.SENT).exists()


def test_two_dispatchers_handle_every_event_exactly_once(manage):
    _publish(NOOP, 5000)
    manage("dispatch_outbox", "--dispatcher-id", "d1", env={"PRICEFEED_OUTBOX_BATCH": "50"})
    manage("dispatch_outbox", "--dispatcher-id", "d2", env={"PRICEFEED_OUTBOX_BATCH": "50"})
    manage("qcluster")
    wait_until(_all_sent, 120, "all events SENT", interval=0.2)
    assert OutboxEvent.objects.count() == 5000
    # Claimed once each: a second claim would have counted a second attempt.
    assert set(OutboxEvent.objects.values_list("attempts", flat=True)) == {1}
    assert not OutboxEvent.objects.filter(sent_at=None).exists()
    # The outbox rows are the record: django-q2 saves no Success for a delivered batch.
    wait_until(lambda: not OrmQ.objects.exists(), 30, "every task acknowledged")
    assert not Task.objects.filter(func=DELIVER_TASK).exists()


def test_events_published_while_dispatchers_wait_are_picked_up(manage):
    dispatcher = manage("dispatch_outbox", env={"PRICEFEED_OUTBOX_POLL_INTERVAL": "30"})
    manage("qcluster")
    dispatcher.wait_for_log("dispatch_outbox started", 15)
    _publish(NOOP, 5)
    # The poll is 30 s: only the NOTIFY sent at commit can wake it this soon.
    wait_until(_all_sent, 15, "events sent after NOTIFY")
    # SIGTERM while waiting: it stops claiming and exits promptly and cleanly.
    assert dispatcher.stop(grace=5) == 0
    assert "dispatch_outbox stopped" in dispatcher.log()


def test_dispatcher_killed_after_its_claim_gets_the_events_back_after_the_timeout(manage):
    _publish(NOOP, 20)
    crashing = manage("dispatch_outbox", env={"PRICEFEED_CRASH_AT": "outbox_after_claim"})
    crashing.wait(20)
    assert crashing.process.returncode == -signal.SIGKILL
    assert OutboxEvent.objects.filter(status=Status.PROCESSING).count() == 20

    manage(
        "dispatch_outbox",
        env={"PRICEFEED_OUTBOX_CLAIM_TIMEOUT": "2", "PRICEFEED_SWEEP_INTERVAL": "0.5"},
    )
    manage("qcluster")
    wait_until(_all_sent, 30, "events sent after the claim expired")
    assert set(OutboxEvent.objects.values_list("attempts", flat=True)) == {2}


def test_an_event_nobody_handles_fails_with_the_reason(manage):
    _publish("nobody.handles.this", 1)
    manage("dispatch_outbox")
    manage("qcluster")
    event = wait_until(
        lambda: OutboxEvent.objects.filter(status=Status.FAILED).first(), 20, "FAILED event"
    )
    assert event.last_error == "no handler for 'nobody.handles.this'"
    assert event.finished_at is not None
