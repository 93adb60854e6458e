"""mailboxes.services: Test connection is requested once while pending, run by a worker,
and its result written to the mailbox."""

from __future__ import annotations

import pytest

from core.dbtime import db_now_minus
from mailboxes import services
from mailboxes.exceptions import ImapError
from mailboxes.models import Mailbox
from mailboxes.tasks import mailbox_test_connection
from tests.factories import create_mailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued_tests(monkeypatch) -> list[int]:
    """The mailbox ids handed to django-q2, instead of enqueueing them."""
    calls: list[int] = []
    monkeypatch.setattr(services, "enqueue_connection_test", calls.append)
    return calls


@pytest.fixture
def probe(monkeypatch):
    """Replaces the IMAP check: returns ``answer`` or raises it when it is an error."""
    state = {"answer": "connected", "calls": 0}

    def fake(settings):
        state["calls"] += 1
        if isinstance(state["answer"], Exception):
            raise state["answer"]
        return state["answer"]

    monkeypatch.setattr(services, "probe_connection", fake)
    return state


def test_request_marks_the_test_and_enqueues_it_after_commit(
    mailbox, queued_tests, django_capture_on_commit_callbacks
):
    Mailbox.objects.filter(pk=mailbox.pk).update(
        test_succeeded=False, test_result="old result", test_finished_at=db_now_minus(60)
    )

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        queued = services.mailbox_tests_request(mailbox_ids=[mailbox.pk])
        assert queued_tests == []  # nothing before commit

    mailbox.refresh_from_db()
    assert queued == [mailbox.pk]
    assert len(callbacks) == 1
    assert queued_tests == [mailbox.pk]
    assert mailbox.test_requested_at is not None
    assert (mailbox.test_finished_at, mailbox.test_succeeded, mailbox.test_result) == (
        None,
        None,
        "",
    )


def test_a_pending_test_is_not_requested_again(
    mailbox, queued_tests, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.mailbox_tests_request(mailbox_ids=[mailbox.pk])
    requested_at = Mailbox.objects.get(pk=mailbox.pk).test_requested_at

    with django_capture_on_commit_callbacks(execute=True):
        again = services.mailbox_tests_request(mailbox_ids=[mailbox.pk])

    assert again == []
    assert queued_tests == [mailbox.pk]
    assert Mailbox.objects.get(pk=mailbox.pk).test_requested_at == requested_at


def test_a_finished_test_can_be_requested_again(mailbox, queued_tests, probe):
    services.mailbox_tests_request(mailbox_ids=[mailbox.pk])
    services.mailbox_test_run(mailbox_id=mailbox.pk)

    assert services.mailbox_tests_request(mailbox_ids=[mailbox.pk]) == [mailbox.pk]


def test_a_test_pending_longer_than_the_task_timeout_can_be_requested_again(
    mailbox, queued_tests, settings
):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300}
    other = create_mailbox(name="other")
    Mailbox.objects.filter(pk=mailbox.pk).update(test_requested_at=db_now_minus(301))
    Mailbox.objects.filter(pk=other.pk).update(test_requested_at=db_now_minus(299))

    queued = services.mailbox_tests_request(mailbox_ids=[mailbox.pk, other.pk])

    assert queued == [mailbox.pk]
    assert services.pending_test_seconds() == 300


def test_run_writes_the_summary_of_a_successful_test(mailbox, probe):
    services.mailbox_tests_request(mailbox_ids=[mailbox.pk])
    probe["answer"] = "connected to imap.supplier.example:993, folder 'INBOX' has 3 message(s)"

    assert mailbox_test_connection(mailbox.pk) is True

    mailbox.refresh_from_db()
    assert mailbox.test_finished_at is not None
    assert mailbox.test_succeeded is True
    assert mailbox.test_result == probe["answer"]


def test_run_writes_the_error_of_a_failed_test(mailbox, probe):
    services.mailbox_tests_request(mailbox_ids=[mailbox.pk])
    probe["answer"] = ImapError("could not connect to imap.supplier.example:993")

    assert mailbox_test_connection(mailbox.pk) is False

    mailbox.refresh_from_db()
    assert (mailbox.test_succeeded, mailbox.test_result) == (
        False,
        "could not connect to imap.supplier.example:993",
    )


def test_run_without_a_pending_test_does_nothing(mailbox, probe):
    """A redelivered task (django-q2 delivers at least once) finds the test done."""
    assert mailbox_test_connection(mailbox.pk) is None
    services.mailbox_tests_request(mailbox_ids=[mailbox.pk])
    mailbox_test_connection(mailbox.pk)
    finished = Mailbox.objects.get(pk=mailbox.pk).test_finished_at

    assert mailbox_test_connection(mailbox.pk) is None
    assert mailbox_test_connection(10**9) is None  # deleted meanwhile
    assert probe["calls"] == 1
    assert Mailbox.objects.get(pk=mailbox.pk).test_finished_at == finished


def test_run_drops_its_result_when_the_test_was_asked_again_meanwhile(mailbox, monkeypatch):
    services.mailbox_tests_request(mailbox_ids=[mailbox.pk])

    def asked_again_while_running(settings):
        Mailbox.objects.filter(pk=mailbox.pk).update(test_requested_at=db_now_minus(-1))
        return "connected"

    monkeypatch.setattr(services, "probe_connection", asked_again_while_running)

    assert mailbox_test_connection(mailbox.pk) is None
    mailbox.refresh_from_db()
    assert (mailbox.test_finished_at, mailbox.test_result) == (None, "")
