"""Announcing outcomes: one event per import for a message with one price list; one event
for the whole message, published by its last import to finish, for a message with many."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from devkit.samples import price_list_csv
from devkit.servers.processes import wait_until
from outbox.models import OutboxEvent
from pricefeed.catalogue import ACCEPTED_EVENT
from pricefeed.imports import lifecycle
from pricefeed.imports.outcome import (
    FINISHED_EVENT,
    MESSAGE_OUTCOME_EVENT,
    OUTCOME_EVENT,
    publish_outcome,
)
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue")

GOOD = price_list_csv(ROWS)


def outcomes():
    """The outcome events (each import made current is also announced to the matching,
    ACCEPTED_EVENT, and each finished one to other systems, FINISHED_EVENT: neither is
    an outcome for the notifications)."""
    return OutboxEvent.objects.exclude(kind__in=[ACCEPTED_EVENT, FINISHED_EVENT])


BAD = b"%PDF-1.7 not a price list"


def test_a_message_with_one_price_list_announces_its_import(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.csv", GOOD)]))

    (event,) = outcomes()
    assert (event.kind, event.aggregate_id) == (OUTCOME_EVENT, str(price_import.pk))


@pytest.mark.usefixtures("imports_wait")
def test_a_message_with_many_price_lists_is_announced_once_by_its_last_import(mailbox, config):
    message = receive(mailbox, [("a.csv", GOOD), ("b.pdf", BAD), ("c.csv", GOOD)])
    first, second, last = message.imports.order_by("pk")

    for price_import in (first, second):
        lifecycle.price_import_run(import_id=price_import.pk, worker="w")
        assert not outcomes().exists()  # others still to come
    lifecycle.price_import_run(import_id=last.pk, worker="w")

    (event,) = outcomes()
    assert (event.kind, event.aggregate_type, event.aggregate_id) == (
        MESSAGE_OUTCOME_EVENT,
        "mailboxes.inboundmessage",
        str(message.pk),
    )
    assert event.payload["finished_by"] == last.pk
    assert event.payload["statuses"] == {Status.SUCCEEDED: 2, Status.FAILED: 1}
    assert [(i["import_id"], i["status"]) for i in event.payload["imports"]] == [
        (first.pk, Status.SUCCEEDED),
        (second.pk, Status.FAILED),
        (last.pk, Status.SUCCEEDED),
    ]


def test_an_import_run_again_announces_the_message_again(mailbox, config):
    message = receive(mailbox, [("a.csv", GOOD), ("b.pdf", BAD)])
    run_all(message)
    failed = message.imports.get(status=Status.FAILED)

    lifecycle.price_imports_requeue(import_ids=[failed.pk])
    lifecycle.price_import_run(import_id=failed.pk, worker="w")

    assert OutboxEvent.objects.filter(kind=MESSAGE_OUTCOME_EVENT).count() == 2


def _waits_for_a_lock(backend_pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [backend_pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "Lock"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("imports_wait")
def test_two_imports_finishing_at_once_announce_their_message_exactly_once(mailbox, config):
    message = receive(mailbox, [("a.csv", GOOD), ("b.csv", GOOD)])
    import_ids = message.imports.order_by("pk").values_list("pk", flat=True)
    workers = {f"w{n}": import_id for n, import_id in enumerate(import_ids)}
    assert len(workers) == 2
    for worker, import_id in workers.items():
        assert lifecycle.IMPORT_WORK.claim(pk=import_id, worker=worker)
    # Both write their outcome before either looks at the message, and neither commits
    # until each has looked or waits for the other's lock: without the lock each would
    # see the other RUNNING, and nobody would send.
    both_written = threading.Barrier(len(workers), timeout=60)
    looked = {worker: threading.Event() for worker in workers}
    may_commit = threading.Event()
    backends: dict[str, int] = {}
    errors: list[BaseException] = []

    def finish(worker: str, import_id: int) -> None:
        try:
            with transaction.atomic():
                lifecycle.IMPORT_WORK.finish(pk=import_id, worker=worker, status=Status.SUCCEEDED)
                backends[worker] = connection.connection.info.backend_pid
                both_written.wait()
                publish_outcome(import_id)
                looked[worker].set()
                assert may_commit.wait(60)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()  # this thread's own

    threads = [threading.Thread(target=finish, args=item) for item in workers.items()]
    for thread in threads:
        thread.start()
    wait_until(
        lambda: (
            len(backends) == len(workers)
            and all(looked[w].is_set() or _waits_for_a_lock(backends[w]) for w in workers)
        ),
        60,
        "each finisher has looked at the message or waits for its lock",
    )
    may_commit.set()
    for thread in threads:
        thread.join(60)  # a liveness bound, not a timing
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []

    (event,) = outcomes()
    assert (event.kind, event.aggregate_id) == (MESSAGE_OUTCOME_EVENT, str(message.pk))
    assert event.payload["statuses"] == {Status.SUCCEEDED: 2}
