"""Process heartbeats: the broker each process records, and the refusal of one that
would use another broker than the live processes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.dbtime import db_now_minus
from fleet import selectors, services
from fleet.exceptions import BrokerMismatch
from fleet.heartbeat import ProcessHeartbeat as Heartbeat
from fleet.models import ProcessHeartbeat, ProcessKind

pytestmark = pytest.mark.django_db

REDIS = "redis:127.0.0.1:6390/0"


@pytest.fixture(autouse=True)
def ttl(settings):
    settings.PRICEFEED_LEASE_TTL = 900  # what is fresh stays fresh however slow the machine
    settings.PRICEFEED_LIVENESS_WINDOW = 900


def register(process_id: str, broker: str, kind: str = ProcessKind.QCLUSTER) -> str:
    return services.process_register(process_id=process_id, kind=kind, pid=1, broker=broker)


def test_the_first_process_records_its_broker():
    assert register("qcluster:a", "orm:default") == "orm:default"

    row = ProcessHeartbeat.objects.get()
    assert (row.kind, row.broker, row.stopped) == ("qcluster", "orm:default", False)
    assert selectors.live_brokers() == {"orm:default": ["qcluster qcluster:a"]}


def test_a_process_with_the_live_ones_broker_starts():
    register("listen_mail:a", "orm:default", ProcessKind.LISTEN_MAIL)
    register("qcluster:b", "orm:default")

    assert ProcessHeartbeat.objects.count() == 2


def test_a_process_with_another_broker_is_refused_naming_both_and_the_setting():
    register("listen_mail:a", "orm:default", ProcessKind.LISTEN_MAIL)

    with pytest.raises(BrokerMismatch) as refused:
        register("qcluster:b", REDIS)

    message = str(refused.value)
    assert "refusing to start qcluster" in message
    assert REDIS in message and "orm:default" in message
    assert "listen_mail listen_mail:a" in message
    assert "PRICEFEED_REDIS_URL" in message
    assert not ProcessHeartbeat.objects.filter(process_id="qcluster:b").exists()


def test_stopped_and_dead_processes_do_not_count():
    register("qcluster:stopped", "orm:default")
    services.process_stopped(process_id="qcluster:stopped")
    register("qcluster:dead", "orm:default")
    ProcessHeartbeat.objects.filter(process_id="qcluster:dead").update(last_seen=db_now_minus(1000))

    assert register("qcluster:new", REDIS) == REDIS
    assert selectors.live_brokers() == {REDIS: ["qcluster qcluster:new"]}


def test_a_process_restarted_under_its_id_with_another_broker_replaces_its_row():
    register("qcluster:a", "orm:default")

    register("qcluster:a", REDIS)

    assert list(ProcessHeartbeat.objects.values_list("broker", flat=True)) == [REDIS]


def test_the_heartbeat_beats_and_marks_itself_stopped(settings):
    settings.Q_CLUSTER = {"name": "pricefeed", "redis": "redis://:pw@127.0.0.1:6390/0"}
    # The thread's own beats (another connection, outside this test's transaction) never
    # come: this test beats by hand.
    settings.PRICEFEED_HEARTBEAT_INTERVAL = 3600
    heartbeat = Heartbeat(process_id="outbox:a", kind=ProcessKind.DISPATCH_OUTBOX)

    with heartbeat.running():
        row = ProcessHeartbeat.objects.get()
        assert (row.broker, row.stopped) == (REDIS, False)
        ProcessHeartbeat.objects.all().delete()
        heartbeat.beat()  # a row pruned meanwhile is made again
        assert ProcessHeartbeat.objects.get().broker == REDIS

    assert ProcessHeartbeat.objects.get().stopped is True


def test_a_process_restarted_under_its_id_records_its_new_pid_and_start_time():
    services.process_register(
        process_id="listen_mail:a", kind=ProcessKind.LISTEN_MAIL, pid=1, broker="orm:default"
    )
    long_ago = timezone.now() - timedelta(hours=1)
    ProcessHeartbeat.objects.update(started_at=long_ago, last_seen=long_ago, stopped=True)

    services.process_register(
        process_id="listen_mail:a", kind=ProcessKind.LISTEN_MAIL, pid=2, broker="orm:default"
    )

    row = ProcessHeartbeat.objects.get()
    assert (row.pid, row.stopped) == (2, False)
    assert row.started_at > long_ago
