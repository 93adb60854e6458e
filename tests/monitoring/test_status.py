"""manage.py pricefeed_status: who listens, what is stuck, failed and due, and the exit
status that cron and monitoring act on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models.functions import Coalesce

from core.dbtime import db_now_minus, db_now_plus
from mailboxes import leases
from mailboxes.models import InboundMessage, InstanceHeartbeat, MailboxLease
from monitoring.status import EXIT_OK, EXIT_STUCK, EXIT_UNLISTENED
from notifications.models import Notification
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from tests import factories
from tests.integration.support import ROOT, database_url

Msg = InboundMessage.Status
Imp = PriceImport.Status
Ev = OutboxEvent.Status

# Timeouts far longer than any test runs, so that what is fresh stays fresh however
# slow the machine; what is stuck is made older than them.
TIMEOUTS = {
    "PRICEFEED_LEASE_TTL": 900,  # a heartbeat older than this is dead
    "PRICEFEED_LIVENESS_WINDOW": 900,
    "PRICEFEED_PROCESSING_CLAIM_TIMEOUT": 3600,
    "PRICEFEED_REQUEUE_AFTER": 1800,
    "PRICEFEED_OUTBOX_CLAIM_TIMEOUT": 2400,
}


@pytest.fixture(autouse=True)
def timeouts(settings):
    for name, value in TIMEOUTS.items():
        setattr(settings, name, value)


def make_installation() -> dict[str, object]:
    """Two listen_mail instances (one live, one dead), four mailboxes (one listened,
    one whose lease its dead owner let expire, one disabled, one with no config yet),
    messages, imports, outbox events and notifications in every interesting state.
    Returns a few of the rows."""
    prices = factories.create_mailbox(name="prices")
    orphan = factories.create_mailbox(name="orphan")
    factories.create_mailbox(name="off", enabled=False)
    factories.create_mailbox(name="no config yet")  # not listened to: nothing to miss
    config = factories.create_config(prices)
    factories.create_config(orphan, name="orphan's")

    leases.heartbeat(instance_id="host-a:1")
    leases.heartbeat(instance_id="host-b:2")
    InstanceHeartbeat.objects.filter(instance_id="host-b:2").update(last_seen=db_now_minus(1800))
    leases.lease_acquire(mailbox_id=prices.pk, owner="host-a:1", ttl=600)
    leases.lease_acquire(mailbox_id=orphan.pk, owner="host-b:2", ttl=600)
    MailboxLease.objects.filter(mailbox=orphan).update(expires_at=db_now_minus(1000))

    def message(status: str, **changes: object) -> InboundMessage:
        row = factories.create_message(prices, status=status)
        if changes:
            InboundMessage.objects.filter(pk=row.pk).update(**changes)
        return row

    # Stuck: claimed 4000 s ago (claim timeout 3600), and received 2000 s ago, never
    # taken (requeue after 1800).
    message(Msg.PROCESSING, claimed_by="w:1", claimed_at=db_now_minus(4000))
    waited = message(Msg.RECEIVED, received_at=db_now_minus(2000))
    # Not stuck: just received, claimed a minute ago, backing off, finished.
    message(Msg.RECEIVED)
    message(Msg.PROCESSING, claimed_by="w:1", claimed_at=db_now_minus(60))
    message(Msg.RETRYABLE, next_attempt_at=db_now_plus(600))
    message(Msg.FAILED)
    done = message(Msg.DONE)

    def price_import(status: str, key: str, **fields: object) -> PriceImport:
        return PriceImport.objects.create(
            message=done, config=config, attachment_key=key, status=status, **fields
        )

    failed_import = price_import(Imp.FAILED, "a", last_error="unsupported format")
    price_import(Imp.SUCCEEDED, "b")
    price_import(Imp.PENDING, "c")  # just created: due, not stuck

    def event(status: str, **changes: object) -> OutboxEvent:
        row = OutboxEvent.objects.create(
            kind="outbox.noop", aggregate_type="test", aggregate_id="1", status=status
        )
        if changes:
            OutboxEvent.objects.filter(pk=row.pk).update(**changes)
        return row

    # The backlog: due 2500 s ago (stuck: claim timeout 2400), due now, backing off.
    overdue = event(Ev.NEW, next_attempt_at=db_now_minus(2500))
    event(Ev.NEW)
    event(Ev.NEW, next_attempt_at=db_now_plus(900))
    event(Ev.SENT)
    event(Ev.FAILED)

    for recipient, status in [("a@example.com", "SENT"), ("b@example.com", "FAILED")]:
        Notification.objects.create(
            kind="import_outcome",
            price_import=failed_import,
            recipient=recipient,
            outcome="FAILED",
            status=status,
        )
    return {"waited": waited, "overdue": overdue}


def run_status(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("pricefeed_status", *args, stdout=out)
    except SystemExit as exit:
        assert isinstance(exit.code, int)
        return exit.code, out.getvalue()
    return 0, out.getvalue()


def due_since(row: InboundMessage):
    return (
        InboundMessage.objects.filter(pk=row.pk)
        .values_list(Coalesce("next_attempt_at", "received_at"), flat=True)
        .get()
    )


@pytest.mark.django_db
def test_json_reports_instances_leases_work_and_exits_with_both_problems():
    rows = make_installation()

    code, out = run_status("--json")
    report = json.loads(out)

    assert code == EXIT_STUCK | EXIT_UNLISTENED == 12
    assert report["exit_code"] == 12
    instances = {i["instance_id"]: i for i in report["instances"]}
    assert (instances["host-a:1"]["state"], instances["host-a:1"]["leases"]) == ("live", 1)
    assert (instances["host-b:2"]["state"], instances["host-b:2"]["leases"]) == ("dead", 0)
    assert instances["host-b:2"]["seen_ago"] >= 1800
    lease = {row["mailbox"]: row for row in report["leases"]}
    assert (lease["prices"]["owner"], lease["prices"]["state"]) == ("host-a:1", "held")
    assert 0 < lease["prices"]["expires_in"] <= 600
    assert (lease["orphan"]["owner"], lease["orphan"]["state"]) == ("host-b:2", "free")
    assert lease["orphan"]["expires_in"] <= -1000
    assert report["unlistened_mailboxes"] == ["orphan"]

    messages = report["messages"]
    assert messages["by_status"] == {
        "RECEIVED": 2,
        "PROCESSING": 2,
        "DONE": 1,
        "IGNORED": 0,
        "RETRYABLE": 1,
        "FAILED": 1,
        "REJECTED": 0,
    }
    assert (messages["stuck"], messages["stuck_running"], messages["stuck_waiting"]) == (2, 1, 1)
    assert (messages["backlog"], messages["due"], messages["failed"]) == (3, 2, 1)
    # The oldest due is the message received 2000 s ago and never taken.
    assert messages["oldest_due_at"] == due_since(rows["waited"]).isoformat()
    assert messages["oldest_due_age"] >= 2000

    imports = report["imports"]
    assert imports["by_status"] == {
        "PENDING": 1,
        "RUNNING": 0,
        "SUCCEEDED": 1,
        "PARTIAL": 0,
        "FAILED": 1,
    }
    assert (imports["stuck"], imports["failed"], imports["backlog"], imports["due"]) == (0, 1, 1, 1)

    outbox = report["outbox"]
    assert outbox["by_status"] == {"NEW": 3, "PROCESSING": 0, "SENT": 1, "FAILED": 1}
    assert (outbox["backlog"], outbox["due"], outbox["stuck"], outbox["failed"]) == (3, 2, 1, 1)
    overdue = OutboxEvent.objects.get(pk=rows["overdue"].pk)
    assert outbox["oldest_due_at"] == overdue.next_attempt_at.isoformat()
    assert outbox["oldest_due_age"] >= 2500

    assert report["notifications"] == {
        "by_status": {"PENDING": 0, "SENT": 1, "FAILED": 1},
        "failed": 1,
    }
    assert report["problems"] == [
        "inbound messages: 2 stuck (1 claimed over 3600 s, 1 due over 1800 s)",
        "outbox events: 1 stuck (0 claimed over 2400 s, 1 due over 2400 s)",
        "mailbox 'orphan' has no live listener",
    ]


@pytest.mark.django_db
def test_text_shows_the_same_for_a_terminal():
    make_installation()

    code, out = run_status()

    assert code == 12
    lines = out.splitlines()
    assert "listen_mail instances" in lines
    assert any(line.split()[:2] == ["host-a:1", "live"] for line in lines)
    assert any(line.split()[:2] == ["host-b:2", "dead"] for line in lines)
    assert any(line.split()[:3] == ["prices", "host-a:1", "held"] for line in lines)
    assert (
        "  RECEIVED 2, PROCESSING 2, DONE 1, IGNORED 0, RETRYABLE 1, FAILED 1, REJECTED 0" in lines
    )
    assert "  stuck 2 (1 claimed over 3600 s, 1 due over 1800 s), failed 1" in lines
    assert "  PENDING 1, RUNNING 0, SUCCEEDED 1, PARTIAL 0, FAILED 1" in lines
    assert "  NEW 3, PROCESSING 0, SENT 1, FAILED 1" in lines
    assert any(line.startswith("  backlog 3, 2 due, oldest due 25") for line in lines)
    assert "problems (exit status 12)" in lines
    assert "  mailbox 'orphan' has no live listener" in lines


@pytest.mark.django_db
def test_all_listened_and_nothing_stuck_exits_0():
    mailbox = factories.create_mailbox()
    leases.heartbeat(instance_id="host-a:1")
    leases.lease_acquire(mailbox_id=mailbox.pk, owner="host-a:1", ttl=600)
    factories.create_message(mailbox, status=Msg.FAILED)  # failed is history, not stuck
    factories.create_message(mailbox, status=Msg.RECEIVED)

    code, out = run_status()

    assert code == EXIT_OK
    assert out.splitlines()[-1] == "no problems"


@pytest.mark.django_db
def test_stuck_work_alone_exits_4():
    mailbox = factories.create_mailbox(enabled=False)  # nothing to listen to
    row = factories.create_message(mailbox, status=Msg.PROCESSING, claimed_by="w:1")
    InboundMessage.objects.filter(pk=row.pk).update(claimed_at=db_now_minus(3601))

    assert run_status("--json")[0] == EXIT_STUCK == 4


@pytest.mark.django_db
def test_an_enabled_mailbox_without_a_live_listener_alone_exits_8():
    listened = factories.create_mailbox(name="listened")
    held_by_stopped = factories.create_mailbox(name="held-by-stopped")
    never_leased = factories.create_mailbox(name="never-leased")
    for mailbox in (listened, held_by_stopped, never_leased):
        factories.create_config(mailbox, name=mailbox.name)
    # Its config disabled: not to be listened to, so not missing a listener.
    factories.create_config(factories.create_mailbox(name="config off"), enabled=False)
    leases.heartbeat(instance_id="host-a:1")
    leases.heartbeat(instance_id="host-c:3", stopping=True)
    leases.lease_acquire(mailbox_id=listened.pk, owner="host-a:1", ttl=600)
    leases.lease_acquire(mailbox_id=held_by_stopped.pk, owner="host-c:3", ttl=600)

    code, out = run_status("--json")

    assert code == EXIT_UNLISTENED == 8
    assert json.loads(out)["unlistened_mailboxes"] == ["held-by-stopped", "never-leased"]


@pytest.mark.django_db(transaction=True)
def test_manage_py_pricefeed_status_json_in_a_process_of_its_own():
    make_installation()

    result = subprocess.run(
        [sys.executable, "manage.py", "pricefeed_status", "--json"],
        cwd=ROOT,
        env={
            **os.environ,
            **{name: str(value) for name, value in TIMEOUTS.items()},
            "DATABASE_URL": database_url(),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 12, result.stderr
    report = json.loads(result.stdout)
    assert report["unlistened_mailboxes"] == ["orphan"]
    assert report["messages"]["stuck"] == 2
    assert report["imports"]["failed"] == 1
    assert report["outbox"]["backlog"] == 3
    assert report["notifications"]["failed"] == 1


def test_an_unreachable_database_fails_with_one_line_and_exit_1(closed_port):
    result = subprocess.run(
        [sys.executable, "manage.py", "pricefeed_status"],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": f"postgres://pricefeed:Secr3t-db-pw@127.0.0.1:{closed_port}/x",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("CommandError: cannot read the status from the database: ")
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Secr3t-db-pw" not in result.stderr
