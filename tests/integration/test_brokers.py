"""One broker everywhere: the whole pipeline on Redis with two clusters, and a process
started with another broker than the live ones refused."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django_q.models import OrmQ

from fleet.models import ProcessHeartbeat
from notifications.models import Notification, Subscription

from .support import ROOT, price_email, received, wait_until


def test_the_whole_pipeline_runs_on_redis_with_two_clusters(
    dovecot, make_mailbox, make_config, manage, smtp_sink, redis_server
):
    port, path = smtp_sink
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    Subscription.objects.create(email="ops@buyer.test")
    env = {
        "PRICEFEED_REDIS_URL": redis_server.url,
        "EMAIL_URL": f"smtp://127.0.0.1:{port}",
        "DEFAULT_FROM_EMAIL": "pricefeed@buyer.test",
    }
    manage("listen_mail", env=env)
    manage("qcluster", env=env, name="qcluster-1")
    manage("qcluster", env=env, name="qcluster-2")
    manage("dispatch_outbox", env=env)
    broker = f"redis:127.0.0.1:{redis_server.port}/0"
    wait_until(
        lambda: (
            sorted(ProcessHeartbeat.objects.values_list("kind", flat=True))
            == ["dispatch_outbox", "listen_mail", "qcluster", "qcluster"]
        ),
        60,
        "four processes registered",
    )
    assert set(ProcessHeartbeat.objects.values_list("broker", flat=True)) == {broker}

    dovecot.append(price_email(sender="Sales <sales@acme.test>"))

    wait_until(
        lambda: (
            len(received(path)) == 1
            and Notification.objects.filter(status=Notification.Status.SENT).exists()
        ),
        60,
        "the notification delivered and recorded",
    )
    assert received(path)[0]["To"] == "ops@buyer.test"
    assert not OrmQ.objects.exists()  # nothing went through the database queue


def refused(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("command", ["qcluster", "dispatch_outbox", "listen_mail"])
def test_a_process_on_another_broker_than_the_live_ones_is_refused(manage, redis_server, command):
    live = manage("qcluster", name="qcluster-orm")  # on the database queue
    wait_until(
        lambda: ProcessHeartbeat.objects.filter(kind="qcluster", stopped=False).exists(),
        60,
        "the live cluster registered",
        on_timeout=live.log,
    )
    env = {
        **live.env,
        "PRICEFEED_REDIS_URL": f"redis://:s3cret@127.0.0.1:{redis_server.port}/0",
        # The live cluster counts as live however slowly this process starts.
        "PRICEFEED_LEASE_TTL": "3600",
        "PRICEFEED_LIVENESS_WINDOW": "3600",
    }

    result = refused([command], env)

    assert result.returncode != 0
    message = result.stderr
    assert f"refusing to start {command}" in message
    assert f"redis:127.0.0.1:{redis_server.port}/0" in message
    assert "orm:default" in message
    assert "PRICEFEED_REDIS_URL" in message
    assert "s3cret" not in message + result.stdout
    assert "Traceback" not in message
    assert not ProcessHeartbeat.objects.filter(kind=command, broker__startswith="redis").exists()
    assert live.alive


def test_dispatch_outbox_marks_its_heartbeat_stopped_when_it_exits(manage):
    dispatcher = manage("dispatch_outbox")
    wait_until(
        lambda: ProcessHeartbeat.objects.filter(kind="dispatch_outbox").exists(),
        60,
        "dispatch_outbox registered",
        on_timeout=dispatcher.log,
    )

    assert dispatcher.stop(grace=30) == 0

    row = ProcessHeartbeat.objects.get(kind="dispatch_outbox")
    assert (row.broker, row.stopped) == ("orm:default", True)
