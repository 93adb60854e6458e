"""The database queue woken by NOTIFY (core/taskqueue.py), on PostgreSQL.

The poll is set to an hour in these tests: a dequeue that returns within the test's
patience was woken by the enqueue's notification, not by its poll."""

from __future__ import annotations

import pickle
import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.models import OrmQ

from core import sql
from core.taskqueue import WakingORM, channel

pytestmark = pytest.mark.django_db(transaction=True)

PATIENCE = 60.0  # seconds; far below the poll, far above any wake-up


@pytest.fixture(autouse=True)
def hour_poll(monkeypatch):
    monkeypatch.setattr(Conf, "POLL", 3600.0)


@pytest.fixture
def broker():
    made = WakingORM(list_key="taskqueue-test")
    yield made
    made.close()


def payloads(*results) -> list:
    return [payload for tasks in results for _, payload in (tasks or [])]


def dequeue_in_thread(broker: WakingORM) -> tuple[threading.Thread, list]:
    """Starts ``broker.dequeue()`` in a thread; the list gets what it returned."""
    result: list = []
    started = threading.Event()

    def run() -> None:
        try:
            broker.listener()  # LISTENing before the enqueue below
            started.set()
            result.append(broker.dequeue())
        finally:
            connection.close()  # this thread's own

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(PATIENCE)
    return thread, result


def test_the_installation_uses_it_for_the_database_queue():
    assert settings.Q_CLUSTER["broker_class"] == "core.taskqueue.WakingORM"
    assert isinstance(get_broker(), WakingORM)


def test_a_task_waiting_in_the_queue_is_taken_at_once_and_only_once(broker, monkeypatch):
    broker.enqueue("payload")

    assert [payload for _, payload in broker.dequeue()] == ["payload"]
    monkeypatch.setattr(Conf, "POLL", 0.1)
    assert not broker.dequeue()  # taken: locked until the retry time
    assert OrmQ.objects.filter(key="taskqueue-test").count() == 1


def test_a_task_is_taken_oldest_first_only_once_its_lock_expired_and_gone_once_acknowledged(
    broker, monkeypatch
):
    monkeypatch.setattr(Conf, "POLL", 0.05)
    monkeypatch.setattr(Conf, "BULK", 10)
    first, second = broker.enqueue("first"), broker.enqueue("second")
    OrmQ.objects.filter(pk=second).update(lock=timezone.now() + timedelta(hours=1))

    assert broker.dequeue() == [(first, "first")]  # the second is still locked
    OrmQ.objects.filter(pk=second).update(lock=timezone.now() - timedelta(seconds=1))
    assert broker.dequeue() == [(second, "second")]
    assert not broker.dequeue()

    broker.acknowledge(first)
    assert list(OrmQ.objects.filter(key="taskqueue-test").values_list("pk", flat=True)) == [second]


def test_a_busy_broker_checks_its_connection_at_most_every_so_often(broker, monkeypatch):
    checks = []
    monkeypatch.setattr(WakingORM, "get_connection", lambda self: checks.append(1))
    for _ in range(5):
        broker.enqueue("payload")
        broker.take()
    assert len(checks) == 1
    monkeypatch.setattr(broker, "_next_check", 0.0)  # CHECK_EVERY has passed
    broker.take()
    assert len(checks) == 2


def test_an_idle_worker_is_woken_by_the_enqueue_not_by_its_poll(broker, monkeypatch):
    thread, result = dequeue_in_thread(broker)

    enqueuer = WakingORM(list_key="taskqueue-test")  # as in another process
    enqueuer.enqueue("payload")
    thread.join(PATIENCE)

    assert not thread.is_alive(), "the waiting dequeue was not woken"
    # Woken, it took the task, or (when its look came first) the next look does.
    monkeypatch.setattr(Conf, "POLL", 0.05)
    assert payloads(*result, broker.dequeue()) == ["payload"]


def test_a_task_enqueued_in_a_transaction_wakes_nobody_until_it_commits(broker):
    listener = broker.listener()
    with transaction.atomic():
        WakingORM(list_key="taskqueue-test").enqueue("inside")
        woken_early = listener.wait(0.5, threading.Event())
    assert not woken_early
    assert listener.wait(PATIENCE, threading.Event())
    assert [payload for _, payload in broker.dequeue()] == ["inside"]


def test_a_rolled_back_enqueue_leaves_no_task_and_no_wake_up(broker):
    listener = broker.listener()
    with pytest.raises(RuntimeError), transaction.atomic():
        WakingORM(list_key="taskqueue-test").enqueue("rolled back")
        raise RuntimeError
    assert not listener.wait(0.5, threading.Event())
    assert not OrmQ.objects.filter(key="taskqueue-test").exists()


def test_of_two_clusters_woken_together_one_takes_the_task(broker, monkeypatch):
    other = WakingORM(list_key="taskqueue-test")
    try:
        first, first_result = dequeue_in_thread(broker)
        second, second_result = dequeue_in_thread(other)
        broker.enqueue("contested")
        first.join(PATIENCE)
        second.join(PATIENCE)
        assert not first.is_alive() and not second.is_alive(), "not both woken"

        monkeypatch.setattr(Conf, "POLL", 0.05)
        taken = payloads(*first_result, *second_result, broker.dequeue(), other.dequeue())
        assert taken == ["contested"]
    finally:
        other.close()


def test_another_queue_is_not_woken(broker):
    listener = broker.listener()
    WakingORM(list_key="another-queue").enqueue("elsewhere")
    assert not listener.wait(0.5, threading.Event())


def test_handed_to_a_child_process_it_makes_its_own_connection(broker):
    parent_listener = broker.listener()

    child = pickle.loads(pickle.dumps(broker))  # as multiprocessing hands it over

    assert child._listener is None
    assert child.listener() is not parent_listener
    child.close()


def test_the_channel_is_a_postgresql_identifier():
    assert channel("pricefeed") == "pricefeed_tasks:pricefeed"
    long = channel("q" * 200)
    assert len(long.encode()) <= 63
    assert '"' not in channel('a"b')


def _queue_statements():
    """Records the statements on django_q_ormq while the block runs."""
    statements: list[str] = []

    def record(execute, sql, params, many, context):
        if "django_q_ormq" in sql:
            statements.append(" ".join(sql.split()))
        return execute(sql, params, many, context)

    return statements, connection.execute_wrapper(record)


def test_a_take_and_an_acknowledgement_commit_without_waiting_for_the_flush(broker):
    pk = broker.enqueue("payload")
    statements, recording = _queue_statements()
    with recording:
        assert broker.take() == [(pk, "payload")]
        broker.acknowledge(pk)
    assert [s.split()[0] for s in statements] == ["UPDATE", "DELETE"]
    assert all(sql.ASYNC_COMMIT in s for s in statements)
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)  # the setting was the statements' own
    assert not OrmQ.objects.filter(key="taskqueue-test").exists()


def test_in_a_callers_transaction_the_queue_leaves_its_commit_alone(broker):
    pk = broker.enqueue("payload")
    statements, recording = _queue_statements()
    with recording, transaction.atomic():
        assert broker.take() == [(pk, "payload")]
        broker.acknowledge(pk)
    assert len(statements) == 2 and not any(sql.ASYNC_COMMIT in s for s in statements)
    assert not OrmQ.objects.filter(key="taskqueue-test").exists()
