"""publish(): an event exists exactly when the change it announces was committed."""

from __future__ import annotations

import uuid

import pytest
from django.db import DataError, IntegrityError, connection, transaction

from devkit.samples import price_list_csv
from outbox import services as outbox_services
from outbox.exceptions import NotInTransaction
from outbox.models import OutboxEvent, time_ordered_uuid
from outbox.services import publish, publish_many, publish_select
from pricefeed.imports import lifecycle
from pricefeed.models import PriceImport
from tests.factories import ROWS, create_mailbox, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")


def test_publish_inside_a_transaction_records_a_new_event(mailbox):
    with transaction.atomic():
        event = publish("mailbox.touched", mailbox, {"why": "test"})
    stored = OutboxEvent.objects.get(pk=event.pk)
    assert (stored.kind, stored.aggregate_type, stored.aggregate_id) == (
        "mailbox.touched",
        "mailboxes.mailbox",
        str(mailbox.pk),
    )
    assert stored.status == OutboxEvent.Status.NEW
    assert stored.payload == {"why": "test"}
    assert stored.next_attempt_at is not None


def test_publish_outside_a_transaction_is_refused(transactional_db):
    mailbox = create_mailbox()
    assert not connection.in_atomic_block  # autocommit, as in a plain script
    with pytest.raises(NotInTransaction, match="inside the transaction"):
        publish("mailbox.touched", mailbox, {})
    assert not OutboxEvent.objects.exists()


def test_a_transaction_that_publishes_and_rolls_back_leaves_no_event(mailbox):
    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        publish("mailbox.touched", mailbox, {})
        raise Abort
    assert not OutboxEvent.objects.exists()


def test_a_transaction_wakes_the_dispatchers_once_however_many_events_it_publishes(
    transactional_db,
):
    class Abort(Exception):
        pass

    def wakes():
        """The wake-ups the transaction will send when it commits."""
        hooks = connection.run_on_commit
        return sum(1 for hook in hooks if hook[1] is outbox_services._wake_dispatchers)

    mailbox = create_mailbox()
    with transaction.atomic():
        for n in range(3):
            publish("mailbox.touched", mailbox, {"n": n})
        publish_many("mailbox.touched", [(mailbox, {}, time_ordered_uuid())])
        assert wakes() == 1
    # The wake-up of a savepoint rolled back goes with it; the next event registers one.
    with transaction.atomic():
        with pytest.raises(Abort), transaction.atomic():
            publish("mailbox.touched", mailbox, {})
            assert wakes() == 1
            raise Abort
        assert wakes() == 0
        publish("mailbox.touched", mailbox, {})
        assert wakes() == 1
    assert OutboxEvent.objects.count() == 5


def test_each_import_outcome_is_published_once_in_its_transaction(mailbox, config):
    (done,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    (failed,) = run_all(receive(mailbox, [("p.csv", b"%PDF-1.7 not a price list")]))
    events = {e.aggregate_id: e for e in OutboxEvent.objects.filter(kind="price_import.finished")}
    assert set(events) == {str(done.pk), str(failed.pk)}
    assert events[str(done.pk)].payload["status"] == PriceImport.Status.SUCCEEDED
    assert events[str(done.pk)].payload["rows_ok"] == 3
    assert events[str(failed.pk)].payload["status"] == PriceImport.Status.FAILED
    assert "unsupported format" in events[str(failed.pk)].payload["error"]
    # Running a finished import again publishes nothing more.
    lifecycle.price_import_run(import_id=done.pk, worker="again")
    assert OutboxEvent.objects.filter(kind="price_import.finished").count() == 2


def test_publish_many_records_every_event_with_its_id_in_the_transaction(mailbox):
    ids = [time_ordered_uuid() for _ in range(3)]
    with transaction.atomic():
        assert publish_many("mailbox.touched", [(mailbox, {"n": i}, ids[i]) for i in range(3)]) == 3
    events = {e.id: e for e in OutboxEvent.objects.all()}
    assert set(events) == set(ids)
    assert [events[i].payload for i in ids] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert {(e.kind, e.aggregate_type, e.aggregate_id, e.status) for e in events.values()} == {
        ("mailbox.touched", "mailboxes.mailbox", str(mailbox.pk), OutboxEvent.Status.NEW)
    }


def test_publish_many_outside_a_transaction_is_refused(transactional_db):
    mailbox = create_mailbox()
    with pytest.raises(NotInTransaction):
        publish_many("mailbox.touched", [(mailbox, {}, uuid.uuid4())])


ROWS_SQL = (
    "SELECT n - 1, jsonb_build_object('n', n * %(times)s) FROM generate_series(1, %(rows)s) n"
)


def test_publish_select_records_an_event_per_row_of_the_query(mailbox):
    with transaction.atomic():
        assert (
            publish_select("mailbox.touched", mailbox, ROWS_SQL, {"times": 10, "rows": 3}, most=5)
            == 3
        )
    events = list(OutboxEvent.objects.all())
    assert sorted(e.payload["n"] for e in events) == [10, 20, 30]
    assert {(e.kind, e.aggregate_type, e.aggregate_id, e.status) for e in events} == {
        ("mailbox.touched", "mailboxes.mailbox", str(mailbox.pk), OutboxEvent.Status.NEW)
    }


def test_publish_select_of_more_rows_than_said_publishes_nothing(mailbox):
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        publish_select("mailbox.touched", mailbox, ROWS_SQL, {"times": 1, "rows": 3}, most=2)
    assert not OutboxEvent.objects.exists()


def test_publish_select_outside_a_transaction_is_refused(transactional_db):
    mailbox = create_mailbox()
    with pytest.raises(NotInTransaction):
        publish_select("mailbox.touched", mailbox, ROWS_SQL, {"times": 1, "rows": 1}, most=1)
    assert not OutboxEvent.objects.exists()
