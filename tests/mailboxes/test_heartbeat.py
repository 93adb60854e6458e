"""The instance heartbeat of ``listen_mail``: a restart under the same instance id
records the new process, not the old one's pid and start time."""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from mailboxes import leases
from mailboxes.models import InstanceHeartbeat
from mailboxes.supervisor import Supervisor

pytestmark = pytest.mark.django_db


def old_row(instance_id: str) -> InstanceHeartbeat:
    """The row an earlier process of ``instance_id`` left: another pid, started and
    last seen an hour ago, stopped."""
    long_ago = timezone.now() - timedelta(hours=1)
    return InstanceHeartbeat.objects.create(
        instance_id=instance_id,
        host="old-host",
        pid=os.getpid() + 1,
        started_at=long_ago,
        last_seen=long_ago,
        stopping=True,
    )


def test_a_restarted_listen_mail_records_its_own_pid_host_and_start_time(settings):
    settings.PRICEFEED_SHUTDOWN_GRACE = 0
    before = old_row("host-a:1")
    stop = threading.Event()
    stop.set()  # starts, records itself, and stops at once

    Supervisor(instance_id="host-a:1", stop=stop).run()

    row = InstanceHeartbeat.objects.get(instance_id="host-a:1")
    assert row.pid == os.getpid()
    assert row.host != "old-host"
    assert row.started_at > before.started_at
    assert row.last_seen > before.last_seen
    assert row.stopping is True  # it stopped again, and said so


def test_an_instance_started_again_is_live_with_a_new_start_time():
    before = old_row("host-b:2")

    leases.instance_started(instance_id="host-b:2")

    row = InstanceHeartbeat.objects.get(instance_id="host-b:2")
    assert (row.pid, row.stopping) == (os.getpid(), False)
    assert row.started_at > before.started_at


def test_a_heartbeat_keeps_the_start_time_of_the_running_process():
    leases.instance_started(instance_id="host-c:3")
    started = InstanceHeartbeat.objects.get(instance_id="host-c:3").started_at

    leases.heartbeat(instance_id="host-c:3")

    assert InstanceHeartbeat.objects.get(instance_id="host-c:3").started_at == started
