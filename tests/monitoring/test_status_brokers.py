"""pricefeed_status shows each process's broker and exits non-zero when the live
processes disagree."""

from __future__ import annotations

import json

import pytest

from fleet.models import ProcessHeartbeat, ProcessKind
from monitoring.status import EXIT_BROKERS, EXIT_OK
from tests.monitoring.test_status import run_status

pytestmark = pytest.mark.django_db

REDIS = "redis:127.0.0.1:6390/0"


@pytest.fixture(autouse=True)
def ttl(settings):
    settings.PRICEFEED_LEASE_TTL = 900
    settings.PRICEFEED_LIVENESS_WINDOW = 900


def add(process_id: str, kind: str, broker: str) -> None:
    ProcessHeartbeat.objects.create(
        process_id=process_id, kind=kind, host="h", pid=1, broker=broker
    )


def test_one_broker_everywhere_is_no_problem():
    add("qcluster:a", ProcessKind.QCLUSTER, REDIS)
    add("outbox:a", ProcessKind.DISPATCH_OUTBOX, REDIS)

    code, out = run_status()

    assert code == EXIT_OK
    lines = out.splitlines()
    table = lines[lines.index("processes") + 1 :][:3]
    assert [line.split() for line in table] == [
        ["process", "kind", "broker", "state"],
        ["outbox:a", "dispatch_outbox", REDIS, "live"],
        ["qcluster:a", "qcluster", REDIS, "live"],
    ]
    assert out.splitlines()[-1] == "no problems"


def test_live_processes_on_two_brokers_exit_16_naming_both():
    add("listen_mail:a", ProcessKind.LISTEN_MAIL, "orm:default")
    add("qcluster:a", ProcessKind.QCLUSTER, REDIS)

    code, out = run_status("--json")
    report = json.loads(out)

    assert code == EXIT_BROKERS == 16
    assert {(p["process_id"], p["broker"], p["live"]) for p in report["processes"]} == {
        ("listen_mail:a", "orm:default", True),
        ("qcluster:a", REDIS, True),
    }
    [problem] = report["problems"]
    assert "different brokers" in problem and REDIS in problem and "orm:default" in problem
