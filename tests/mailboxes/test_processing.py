"""mailboxes.processing: the state machine of inbound messages and the queue driving it."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from core.exceptions import ClaimLost
from mailboxes import processing
from mailboxes.models import InboundMessage

pytestmark = pytest.mark.django_db

Status = InboundMessage.Status


# -- enqueue_processing ------------------------------------------------------------------


@pytest.fixture
def async_tasks(monkeypatch) -> list[tuple]:
    """What would have been handed to django-q2's async_task."""
    calls: list[tuple] = []

    def async_task(func, *args, **kwargs):
        calls.append((func, args, kwargs))

    monkeypatch.setattr("django_q.tasks.async_task", async_task)
    return calls


def test_enqueue_processing_without_a_task_enqueues_nothing_and_warns(
    monkeypatch, async_tasks, caplog
):
    monkeypatch.setattr(processing, "_message_task", None)

    with caplog.at_level(logging.WARNING, logger="mailboxes.processing"):
        processing.enqueue_processing([7, 8])

    assert async_tasks == []
    (warning,) = [r for r in caplog.records if r.name == "mailboxes.processing"]
    assert warning.levelno == logging.WARNING
    assert "2 message(s) wait" in warning.getMessage()


def test_enqueue_processing_hands_each_message_to_the_task_that_was_set(monkeypatch, async_tasks):
    monkeypatch.setattr(processing, "_message_task", None)
    processing.set_message_task("somewhere.process")

    processing.enqueue_processing(iter([7, 8]))

    assert async_tasks == [
        ("somewhere.process", (7,), {"task_name": "process_message 7"}),
        ("somewhere.process", (8,), {"task_name": "process_message 8"}),
    ]


@pytest.mark.django_db(transaction=True)  # not inside the test's own transaction
def test_enqueue_processing_enqueues_a_batch_in_one_transaction(monkeypatch):
    # One commit per batch, not per task (the listener enqueues after every recording).
    from django.db import transaction

    seen: list[bool] = []
    monkeypatch.setattr(
        "django_q.tasks.async_task",
        lambda *args, **kwargs: seen.append(transaction.get_connection().in_atomic_block),
    )
    monkeypatch.setattr(processing, "_message_task", "somewhere.process")

    processing.enqueue_processing([7, 8])

    assert seen == [True, True]


def test_pricefeed_names_its_task_at_startup():
    assert processing._message_task == "pricefeed.tasks.process_message"


def test_enqueue_processing_of_no_messages_does_nothing(async_tasks):
    processing.enqueue_processing([])

    assert async_tasks == []


# -- message_finish ----------------------------------------------------------------------


def test_finish_moves_a_claimed_message_to_its_final_state(make_message):
    message = make_message(last_error="an earlier attempt failed")
    assert processing.message_claim(message_id=message.pk, worker="w1")

    processing.message_finish(
        message_id=message.pk, worker="w1", status=Status.IGNORED, match_report={"configs": []}
    )

    message.refresh_from_db()
    assert (message.status, message.claimed_by, message.last_error) == (Status.IGNORED, "", "")
    assert message.match_report == {"configs": []}
    assert message.finished_at is not None


def test_finish_by_a_worker_whose_claim_was_swept_raises_claim_lost(make_message):
    message = make_message()
    assert processing.message_claim(message_id=message.pk, worker="w1")
    InboundMessage.objects.filter(pk=message.pk).update(status=Status.RETRYABLE, claimed_by="")

    with pytest.raises(ClaimLost):
        processing.message_finish(message_id=message.pk, worker="w1", status=Status.DONE)

    message.refresh_from_db()
    assert message.status == Status.RETRYABLE


# -- sweep, requeue, mark failed ------------------------------------------------------------


def test_sweep_returns_an_expired_processing_claim_to_retryable(settings, make_message, enqueued):
    timeout = settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT
    stuck = make_message(
        status=Status.PROCESSING,
        claimed_by="dead-worker",
        claimed_at=timezone.now() - timedelta(seconds=timeout * 2),
        attempts=1,
    )
    busy = make_message(
        status=Status.PROCESSING, claimed_by="live-worker", claimed_at=timezone.now(), attempts=1
    )

    result = processing.messages_sweep()

    assert result.expired_claims == 1
    stuck.refresh_from_db()
    assert stuck.status == Status.RETRYABLE
    assert stuck.claimed_by == ""
    assert "claim by dead-worker expired" in stuck.last_error
    assert stuck.next_attempt_at > timezone.now()
    busy.refresh_from_db()
    assert (busy.status, busy.claimed_by) == (Status.PROCESSING, "live-worker")


def test_sweep_enqueues_a_retryable_message_that_is_due(make_message, enqueued):
    # Marked RETRYABLE two minutes ago, due one minute ago.
    due = make_message(
        status=Status.RETRYABLE, attempts=1, next_attempt_at=timezone.now() - timedelta(minutes=1)
    )
    InboundMessage.objects.filter(pk=due.pk).update(
        updated_at=timezone.now() - timedelta(minutes=2)
    )
    make_message(
        status=Status.RETRYABLE, attempts=1, next_attempt_at=timezone.now() + timedelta(hours=1)
    )

    result = processing.messages_sweep()

    assert enqueued == [due.pk]
    assert result.requeued == 1
    # Handed to the queue once: the next sweep leaves it to the worker.
    assert processing.messages_sweep().requeued == 0
    assert enqueued == [due.pk]


def test_sweep_enqueues_a_received_message_nobody_picked_up(settings, make_message, enqueued):
    forgotten = make_message()
    fresh = make_message()
    InboundMessage.objects.filter(pk=forgotten.pk).update(
        updated_at=timezone.now() - timedelta(seconds=settings.PRICEFEED_REQUEUE_AFTER * 2)
    )

    processing.messages_sweep()

    assert enqueued == [forgotten.pk]
    assert fresh.pk not in enqueued


def test_requeue_moves_finished_messages_back_to_received_and_enqueues_them(
    make_message, enqueued, django_capture_on_commit_callbacks
):
    finished = [
        make_message(status=s, attempts=3, last_error="old error", finished_at=timezone.now())
        for s in (Status.DONE, Status.IGNORED, Status.FAILED)
    ]
    in_progress = make_message(status=Status.PROCESSING, claimed_by="w9", attempts=1)

    with django_capture_on_commit_callbacks(execute=True):
        moved = processing.messages_requeue(message_ids=[m.pk for m in [*finished, in_progress]])

    assert moved == 3
    for message in finished:
        message.refresh_from_db()
        assert message.status == Status.RECEIVED
        assert message.attempts == 0
        assert message.last_error == ""
        assert message.finished_at is None
    assert sorted(enqueued) == sorted(m.pk for m in finished)
    in_progress.refresh_from_db()
    assert (in_progress.status, in_progress.claimed_by) == (Status.PROCESSING, "w9")


def test_requeue_skips_a_message_whose_body_was_not_stored(
    make_message, enqueued, django_capture_on_commit_callbacks
):
    refused = make_message(status=Status.REJECTED, raw=None, sha256="")

    with django_capture_on_commit_callbacks(execute=True):
        moved = processing.messages_requeue(message_ids=[refused.pk])

    assert moved == 0
    assert enqueued == []
    refused.refresh_from_db()
    assert refused.status == Status.REJECTED


def test_mark_failed_fails_unfinished_messages_with_the_reason(make_message):
    open_ = [make_message(status=s) for s in (Status.RECEIVED, Status.RETRYABLE)]
    in_progress = make_message(status=Status.PROCESSING, claimed_by="w1")
    done = make_message(status=Status.DONE)

    moved = processing.messages_mark_failed(
        message_ids=[m.pk for m in [*open_, in_progress, done]], reason="marked failed by ops"
    )

    assert moved == 3
    for message in [*open_, in_progress]:
        message.refresh_from_db()
        assert message.status == Status.FAILED
        assert message.last_error == "marked failed by ops"
        assert message.claimed_by == ""
        assert message.finished_at is not None
    done.refresh_from_db()
    assert done.status == Status.DONE
