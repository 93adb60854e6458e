"""core.claims.ClaimedWork on a real model (InboundMessage): finishing a claim and an
operator's requeue are conditional UPDATEs that never take a row from another state; a
permanent error fails a row at once; a run that ends with its worker counts a crash."""

from __future__ import annotations

import pytest
from django.db import DataError
from django.utils import timezone

from core.exceptions import ClaimLost
from mailboxes.models import InboundMessage
from mailboxes.processing import MESSAGE_WORK

pytestmark = pytest.mark.django_db

Status = InboundMessage.Status

# The messages' claims: the generic mechanism on a real model.
WORK = MESSAGE_WORK


def claimed(make_message, worker: str = "w1") -> InboundMessage:
    message = make_message(last_error="an earlier attempt failed")
    assert WORK.claim(pk=message.pk, worker=worker)
    return message


def test_finish_stores_the_final_state_and_clears_the_claim(make_message):
    message = claimed(make_message)

    WORK.finish(pk=message.pk, worker="w1", status=Status.DONE, match_report={"ok": True})

    message.refresh_from_db()
    assert (message.status, message.claimed_by, message.claimed_at) == (Status.DONE, "", None)
    assert message.last_error == ""
    assert message.match_report == {"ok": True}
    assert message.finished_at is not None


def test_finish_after_the_claim_was_swept_back_raises_claim_lost_and_changes_nothing(
    make_message,
):
    message = claimed(make_message)
    InboundMessage.objects.filter(pk=message.pk).update(
        status=Status.RETRYABLE, claimed_by="", claimed_at=None
    )

    with pytest.raises(ClaimLost, match=f"message {message.pk} is no longer claimed by w1"):
        WORK.finish(pk=message.pk, worker="w1", status=Status.DONE)

    message.refresh_from_db()
    assert (message.status, message.finished_at) == (Status.RETRYABLE, None)


def test_finish_by_another_worker_than_the_claimer_raises_claim_lost(make_message):
    message = claimed(make_message, worker="w1")

    with pytest.raises(ClaimLost):
        WORK.finish(pk=message.pk, worker="w2", status=Status.DONE)

    message.refresh_from_db()
    assert (message.status, message.claimed_by) == (Status.PROCESSING, "w1")


def test_finish_of_a_row_that_is_gone_raises_claim_lost(make_message):
    message = claimed(make_message)
    InboundMessage.objects.filter(pk=message.pk).delete()

    with pytest.raises(ClaimLost):
        WORK.finish(pk=message.pk, worker="w1", status=Status.DONE)


def test_requeue_moves_only_the_rows_in_the_given_states(
    make_message, django_capture_on_commit_callbacks
):
    now = timezone.now()
    done = make_message(status=Status.DONE, attempts=2, last_error="x", finished_at=now)
    failed = make_message(status=Status.FAILED, attempts=5, last_error="boom", finished_at=now)
    ignored = make_message(status=Status.IGNORED, attempts=1, finished_at=now)
    running = make_message(status=Status.PROCESSING, claimed_by="w9", claimed_at=now, attempts=1)
    enqueued: list[list[int]] = []

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        moved = WORK.requeue(
            pks=[m.pk for m in (done, failed, ignored, running)],
            from_states=[Status.DONE, Status.FAILED],
            enqueue=enqueued.append,
        )
        assert enqueued == []  # handed over once the transaction commits

    assert moved == 2
    assert len(callbacks) == 1
    assert [sorted(ids) for ids in enqueued] == [sorted([done.pk, failed.pk])]
    for message in (done, failed):
        message.refresh_from_db()
        assert (message.status, message.attempts, message.last_error) == (Status.RECEIVED, 0, "")
        assert message.finished_at is None
        assert message.next_attempt_at is None
    ignored.refresh_from_db()
    running.refresh_from_db()
    assert (ignored.status, ignored.attempts) == (Status.IGNORED, 1)
    assert (running.status, running.claimed_by) == (Status.PROCESSING, "w9")


def test_requeue_leaves_rows_that_fail_the_extra_conditions(make_message):
    kept = make_message(status=Status.FAILED)
    unread = make_message(None, status=Status.FAILED)

    moved = WORK.requeue(pks=[kept.pk, unread.pk], from_states=[Status.FAILED], raw__isnull=False)

    assert moved == 1
    assert dict(InboundMessage.objects.values_list("pk", "status")) == {
        kept.pk: Status.RECEIVED,
        unread.pk: Status.FAILED,
    }


def test_requeue_of_nothing_in_those_states_enqueues_nothing(
    make_message, django_capture_on_commit_callbacks
):
    received = make_message()
    enqueued: list[list[int]] = []

    with django_capture_on_commit_callbacks(execute=True):
        moved = WORK.requeue(pks=[received.pk], from_states=[Status.DONE], enqueue=enqueued.append)

    assert (moved, enqueued) == (0, [])


# -- permanent errors and crashes ----------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        DataError("value too long for type character varying(255)"),
        RecursionError("maximum recursion depth exceeded"),
        MemoryError(),
    ],
    ids=["data-error", "recursion-error", "memory-error"],
)
def test_a_permanent_error_fails_the_row_on_its_first_attempt_with_the_reason(
    make_message, caplog, error
):
    message = make_message()

    def work() -> str:
        raise error

    assert WORK.run(pk=message.pk, worker="w1", work=work) == Status.FAILED
    message.refresh_from_db()
    assert (message.status, message.attempts, message.claimed_by) == (Status.FAILED, 1, "")
    assert message.last_error.startswith(type(error).__name__)
    assert "not retried" in message.last_error
    assert message.finished_at is not None
    assert any(r.getMessage().startswith("ALERT message failed") for r in caplog.records)


def test_a_transient_error_is_still_retried(make_message):
    message = make_message()

    def work() -> str:
        raise ConnectionResetError("server went away")

    assert WORK.run(pk=message.pk, worker="w1", work=work) == Status.RETRYABLE
    message.refresh_from_db()
    assert (message.status, message.attempts) == (Status.RETRYABLE, 1)


def test_a_run_stopped_by_system_exit_counts_a_crash_and_lets_the_exit_go_on(make_message):
    # django-q2's task timeout raises a SystemExit subclass inside the task.
    message = make_message()

    def work() -> str:
        raise SystemExit("Task exceeded maximum timeout value (300 seconds)")

    with pytest.raises(SystemExit):
        WORK.run(pk=message.pk, worker="w1", work=work)

    message.refresh_from_db()
    assert (message.status, message.crashes, message.claimed_by) == (Status.RETRYABLE, 1, "")
    assert "SystemExit: Task exceeded maximum timeout value" in message.last_error
    assert message.next_attempt_at > timezone.now()


def test_the_second_crash_fails_the_row_with_the_reason_and_an_alert(
    make_message, settings, mailoutbox, django_capture_on_commit_callbacks
):
    settings.ADMINS = [("Ops", "ops@example.test")]
    message = make_message()
    assert WORK.claim(pk=message.pk, worker="w1")
    assert WORK.crashed(pk=message.pk, worker="w1", detail="killed") == Status.RETRYABLE
    InboundMessage.objects.filter(pk=message.pk).update(next_attempt_at=None)
    assert WORK.claim(pk=message.pk, worker="w2")

    with django_capture_on_commit_callbacks(execute=True):
        assert WORK.crashed(pk=message.pk, worker="w2", detail="killed again") == Status.FAILED

    message.refresh_from_db()
    assert (message.status, message.crashes, message.attempts) == (Status.FAILED, 2, 2)
    assert message.last_error == (
        "the worker process died while running it 2 times (a reader crashed or memory ran "
        "out); last: killed again"
    )
    (alert_mail,) = mailoutbox
    assert "message failed" in alert_mail.subject
    # Counted once: the claim is gone, a second reaper of the same death moves nothing.
    assert WORK.crashed(pk=message.pk, worker="w2", detail="killed again") is None


def test_the_crash_limit_is_a_setting(make_message, settings):
    settings.PRICEFEED_CRASH_MAX_ATTEMPTS = 1
    message = make_message()
    assert WORK.claim(pk=message.pk, worker="w1")

    assert WORK.crashed(pk=message.pk, worker="w1", detail="killed") == Status.FAILED
    message.refresh_from_db()
    assert message.last_error.startswith("the worker process died while running it once")


def test_requeue_gives_a_crashed_row_its_crashes_back(make_message):
    message = make_message(status=Status.FAILED, crashes=2, attempts=2)

    assert WORK.requeue(pks=[message.pk], from_states=[Status.FAILED]) == 1

    message.refresh_from_db()
    assert (message.status, message.crashes, message.attempts) == (Status.RECEIVED, 0, 0)
