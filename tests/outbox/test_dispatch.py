"""Claiming and recording results (the services under dispatch_outbox), in process."""

from __future__ import annotations

import re
import time
import uuid

import pytest
from django.db import transaction

from outbox import handlers, services, sql, tasks
from outbox.models import OutboxEvent, time_ordered_uuid

Status = OutboxEvent.Status


@pytest.fixture
def flaky_handler():
    """A handler that fails every event until told otherwise."""
    state = {"error": OSError("SMTP 451 try again later")}

    @handlers.handler("test.flaky", label="flaky")
    def handle(events):
        return {event.id: state["error"] for event in events}

    yield state
    handlers._handlers.pop("test.flaky", None)


def _publish(mailbox, kind, count=1):
    with transaction.atomic():
        return [services.publish(kind, mailbox, {"n": i}) for i in range(count)]


def test_claim_takes_due_new_events_oldest_first_and_marks_them(mailbox):
    events = _publish(mailbox, handlers.NOOP, 5)
    claimed = services.events_claim(dispatcher="d1", limit=3)
    assert len(claimed) == 3
    assert set(claimed) <= {e.id for e in events}
    rows = OutboxEvent.objects.filter(id__in=claimed)
    assert {(r.status, r.claimed_by, r.attempts) for r in rows} == {(Status.PROCESSING, "d1", 1)}
    assert all(r.claimed_at for r in rows)
    # The rest, and nothing already claimed, go to the next claim.
    assert set(services.events_claim(dispatcher="d2", limit=10)).isdisjoint(claimed)
    assert services.events_claim(dispatcher="d3", limit=10) == []


def test_a_failed_attempt_goes_back_to_new_later_and_fails_with_one_alert_at_the_limit(
    mailbox, flaky_handler, settings, mailoutbox, django_capture_on_commit_callbacks
):
    settings.ADMINS = [("Ops", "ops@example.test")]
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 2
    (event,) = _publish(mailbox, "test.flaky")

    ids = services.events_claim(dispatcher="d", limit=10)
    assert services.events_deliver(event_ids=ids, dispatcher="d") == {
        "sent": 0,
        "retry": 1,
        "failed": 0,
    }
    event.refresh_from_db()
    assert event.status == Status.NEW
    assert "451" in event.last_error
    assert services.events_claim(dispatcher="d", limit=10) == []  # not due yet

    OutboxEvent.objects.filter(id=event.id).update(next_attempt_at=event.created_at)
    ids = services.events_claim(dispatcher="d", limit=10)
    with django_capture_on_commit_callbacks(execute=True):
        services.events_deliver(event_ids=ids, dispatcher="d")
    event.refresh_from_db()
    assert (event.status, event.attempts) == (Status.FAILED, 2)
    assert len(mailoutbox) == 1
    assert "outbox event failed" in mailoutbox[0].subject


def test_results_of_a_claim_that_was_taken_away_are_not_recorded(mailbox):
    (event,) = _publish(mailbox, handlers.NOOP)
    ids = services.events_claim(dispatcher="old", limit=1)
    # Expired and claimed again by another dispatcher in between.
    OutboxEvent.objects.filter(id=event.id).update(claimed_by="new")
    assert services.events_deliver(event_ids=ids, dispatcher="old") == {
        "sent": 0,
        "retry": 0,
        "failed": 0,
    }
    event.refresh_from_db()
    assert (event.status, event.claimed_by) == (Status.PROCESSING, "new")


def test_only_the_events_still_claimed_are_marked_sent(mailbox):
    events = _publish(mailbox, handlers.NOOP, 3)
    ids = services.events_claim(dispatcher="old", limit=10)
    OutboxEvent.objects.filter(id=events[0].id).update(claimed_by="new")
    # Marked in one statement, still conditional on the claim; ids may come as strings.
    assert services.events_mark_sent(event_ids=[str(i) for i in ids], dispatcher="old") == 2
    statuses = dict(OutboxEvent.objects.values_list("id", "status"))
    assert statuses[events[0].id] == Status.PROCESSING
    assert [statuses[e.id] for e in events[1:]] == [Status.SENT, Status.SENT]


def test_handlers_get_the_claimed_events_in_claim_order_with_their_payloads(mailbox):
    events = _publish(mailbox, handlers.NOOP, 3)
    ids = services.events_claim(dispatcher="d", limit=10)
    claimed = services.events_claimed(event_ids=reversed(ids), dispatcher="d")
    assert [e.id for e in claimed] == [e.id for e in events]
    assert [(e.kind, e.payload, e.attempts) for e in claimed] == [
        (handlers.NOOP, {"n": i}, 1) for i in range(3)
    ]
    assert services.events_claimed(event_ids=ids, dispatcher="someone else") == []


def test_the_claim_reads_the_partial_index_and_scans_nothing_else(mailbox):
    """With a small table (10k SENT, 1k NEW) the planner once joined the claimed ids
    back to the table with a hash join over a sequential scan of every row."""
    from django.db import connection

    OutboxEvent.objects.bulk_create(
        [
            OutboxEvent(
                kind=handlers.NOOP,
                aggregate_type="a",
                aggregate_id=str(i),
                status=Status.SENT if i < 10_000 else Status.NEW,
            )
            for i in range(11_000)
        ],
        batch_size=2000,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE outbox_outboxevent")
        cursor.execute("EXPLAIN " + sql.CLAIM, [100, "d"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using outbox_new_due" in plan, plan
    # The locked rows are found again by ctid, not by a second descent of the key.
    assert "Tid Scan" in plan, plan
    assert "Seq Scan" not in plan, plan


def test_event_ids_are_time_ordered_uuids():
    first = time_ordered_uuid()
    time.sleep(0.002)
    later = [time_ordered_uuid() for _ in range(1000)]
    assert {u.version for u in [first, *later]} == {7}
    assert {u.variant for u in later} == {uuid.RFC_4122}
    assert len(set(later)) == 1000
    # The first 48 bits are the milliseconds: a later id sorts after an earlier one.
    assert all(first < u for u in later)
    assert abs((first.int >> 80) - time.time() * 1000) < 5000
    assert OutboxEvent._meta.get_field("id").default is time_ordered_uuid


@pytest.mark.django_db(transaction=True)  # autocommit, as a worker runs
def test_a_worker_reads_its_batch_on_a_new_connection_when_the_old_one_broke(mailbox):
    """The batch's first read skips Django's health check (its SELECT 1): a connection
    that broke meanwhile is replaced and the read made again."""
    from django.db import connection

    events = _publish(mailbox, handlers.NOOP, 2)
    ids = services.events_claim(dispatcher="d", limit=10)
    connection.connection.close()  # as a server restart would leave it
    connection.health_check_done = False  # as django-q2 leaves it before a task
    claimed = services.events_claimed(event_ids=ids, dispatcher="d")
    assert [e.id for e in claimed] == [e.id for e in events]
    assert services.events_mark_sent(event_ids=ids, dispatcher="d") == 2


def test_handlers_get_events_whose_other_fields_load_on_first_use(mailbox):
    (event,) = _publish(mailbox, handlers.NOOP)
    ids = services.events_claim(dispatcher="d", limit=1)
    (claimed,) = services.events_claimed(event_ids=[str(i) for i in ids], dispatcher="d")
    assert claimed.id == event.id and claimed.payload == {"n": 0}
    assert not claimed._state.adding and claimed._state.db == "default"
    loaded = {f.attname for f in OutboxEvent._meta.concrete_fields} - claimed.get_deferred_fields()
    assert loaded == set(sql.HANDLER_FIELDS)
    assert (claimed.status, claimed.claimed_by) == (Status.PROCESSING, "d")  # read now


@pytest.mark.django_db(transaction=True)
def test_the_dispatch_loops_connections_commit_without_waiting_for_the_flush():
    """Their claims and hand-offs are recoverable (outbox/sql.py, COMMIT_WITHOUT_FLUSH);
    other connections of the process keep waiting for it."""
    import threading

    from django.db import connection

    from outbox.dispatcher import Dispatcher

    def synchronous_commit() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    seen = []

    def run(dispatch: bool) -> None:
        try:
            connection.ensure_connection()
            if dispatch:
                stop = threading.Event()
                stop.set()  # the loop ends at once; its connection is set up before
                Dispatcher(dispatcher_id="test", stop=stop).run()
            seen.append(synchronous_commit())
        finally:
            connection.close()  # this thread's own

    for dispatch in (True, False):  # a connection made after the loop stopped: as usual
        thread = threading.Thread(target=run, args=(dispatch,))
        thread.start()
        thread.join(30)
    assert seen == ["off", "on"]


# -- the dispatcher's batches: found by the claimed rows' addresses ----------------------

NOTHING = {"sent": 0, "retry": 0, "failed": 0}


@pytest.fixture
def touching_handler():
    """A handler that changes its own events' rows (keeping the claim) and succeeds."""

    @handlers.handler("test.touch", label="touch")
    def handle(events):
        OutboxEvent.objects.filter(id__in=[e.id for e in events]).update(last_error="touched")
        return {event.id: None for event in events}

    yield
    handlers._handlers.pop("test.touch", None)


def test_a_claimed_batch_is_delivered_by_address_and_marked_sent(mailbox):
    events = _publish(mailbox, handlers.NOOP, 3)
    batch = services.events_claim_batch(dispatcher="d", limit=10)
    assert len(batch) == 3
    assert all(re.fullmatch(r"\(\d+,\d+\)", address) for address in batch), batch
    assert tasks.deliver_batch(batch, "d") == {"sent": 3, "retry": 0, "failed": 0}
    rows = OutboxEvent.objects.filter(id__in=[e.id for e in events])
    assert {(r.status, r.claimed_by, r.attempts) for r in rows} == {(Status.SENT, "", 1)}


def test_a_batch_finds_nothing_at_its_addresses_once_its_claim_was_taken_away(mailbox):
    (event,) = _publish(mailbox, handlers.NOOP)
    batch = services.events_claim_batch(dispatcher="old", limit=1)
    # The claim expired (the sweep put the event back) and another dispatcher took it:
    # the row now lies elsewhere, and nothing at the old address carries the old claim.
    OutboxEvent.objects.filter(id=event.id).update(status=Status.NEW, claimed_by="")
    assert services.events_claim(dispatcher="new", limit=1) == [event.id]
    assert services.events_deliver_batch(batch=batch, dispatcher="old") == NOTHING
    event.refresh_from_db()
    assert (event.status, event.claimed_by) == (Status.PROCESSING, "new")


def test_an_address_of_a_row_under_another_claim_delivers_nothing(mailbox):
    _publish(mailbox, handlers.NOOP, 2)
    mine = services.events_claim_batch(dispatcher="mine", limit=1)
    theirs = services.events_claim_batch(dispatcher="theirs", limit=1)
    assert services.events_deliver_batch(batch=theirs, dispatcher="mine") == NOTHING
    assert services.events_deliver_batch(batch=mine + theirs, dispatcher="mine")["sent"] == 1
    assert sorted(OutboxEvent.objects.values_list("status", "claimed_by")) == [
        (Status.PROCESSING, "theirs"),
        (Status.SENT, ""),
    ]


def test_a_claimed_row_changed_under_its_claim_is_still_marked_sent(mailbox, touching_handler):
    """Nothing changes a claimed row but its own results; if something did, its address
    would find nothing when the successes are marked, and the ids find them instead."""
    _publish(mailbox, "test.touch", 2)
    batch = services.events_claim_batch(dispatcher="d", limit=10)
    assert services.events_deliver_batch(batch=batch, dispatcher="d")["sent"] == 2
    assert set(OutboxEvent.objects.values_list("status", "last_error")) == {(Status.SENT, "")}


def test_a_batch_of_ids_queued_by_an_earlier_dispatcher_is_still_delivered(mailbox):
    _publish(mailbox, handlers.NOOP, 2)
    ids = services.events_claim(dispatcher="d", limit=10)
    assert tasks.deliver([str(i) for i in ids], "d")["sent"] == 2
    assert set(OutboxEvent.objects.values_list("status", flat=True)) == {Status.SENT}


def test_a_batch_is_read_and_marked_by_address_without_an_index(mailbox):
    from django.db import connection

    OutboxEvent.objects.bulk_create(
        [
            OutboxEvent(kind=handlers.NOOP, aggregate_type="a", aggregate_id=str(i))
            for i in range(5000)
        ],
        batch_size=2000,
    )
    addresses = services._tid_array(f"({page},{item})" for page in range(5) for item in (1, 2))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE outbox_outboxevent")
        for statement in (sql.CLAIMED_AT, sql.MARK_SENT_AT):
            cursor.execute("EXPLAIN " + statement, [addresses, "d"])
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "Tid Scan" in plan, plan
            assert "Index" not in plan and "Seq Scan" not in plan, plan
