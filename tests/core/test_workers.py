"""core.workers: the claims of a dead worker process are reaped as crashes (retried once,
then FAILED); a live process's claims are left alone; a worker caps its memory at start."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.db import connection

from core import sweeps, workers
from devkit.servers.processes import wait_until
from mailboxes.models import InboundMessage
from mailboxes.processing import MESSAGE_WORK
from outbox.models import OutboxEvent
from pricefeed.imports.lifecycle import IMPORT_WORK
from pricefeed.imports.outcome import OUTCOME_EVENT
from pricefeed.models import PriceImport
from tests.factories import receive

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_queue", "imports_wait")]

Status = PriceImport.Status

ROOT = Path(__file__).resolve().parents[2]


def dead_pid() -> int:
    """The pid of a process that ran and was waited for: no process has it now."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def claim_as(price_import: PriceImport, worker: str) -> None:
    PriceImport.objects.filter(pk=price_import.pk).update(next_attempt_at=None)
    assert IMPORT_WORK.claim(pk=price_import.pk, worker=worker)


@pytest.fixture
def pending_import(mailbox, config) -> PriceImport:
    message = receive(mailbox, [("p.csv", b"sku;price\nA-1;10,50\n")])
    return message.imports.get()


def test_both_kinds_of_worker_claims_are_watched():
    assert workers.watched() == {"messages": MESSAGE_WORK, "imports": IMPORT_WORK}
    assert sweeps.registered()["dead workers"] == workers.reap_dead_claims


def test_a_dead_workers_import_fails_at_the_first_crash(
    pending_import, settings, mailoutbox, django_capture_on_commit_callbacks
):
    # An import reads the same bytes on every run: its worker would die again.
    settings.ADMINS = [("Ops", "ops@example.test")]
    first = f"{workers.host()}:{dead_pid()}"
    claim_as(pending_import, first)

    with django_capture_on_commit_callbacks(execute=True):
        assert workers.reap_dead_claims() == 1

    pending_import.refresh_from_db()
    assert (pending_import.status, pending_import.crashes, pending_import.attempts) == (
        Status.FAILED,
        1,
        1,
    )
    assert pending_import.last_error.startswith(
        "the worker process died while running it once (a reader crashed or memory ran out)"
    )
    assert f"the worker process {first} died while running it" in pending_import.last_error
    # A FAILED import like any other: its outcome announced, an alert sent.
    (event,) = OutboxEvent.objects.filter(aggregate_id=str(pending_import.pk), kind=OUTCOME_EVENT)
    assert event.payload["status"] == Status.FAILED
    (alert_mail,) = mailoutbox
    assert "price import failed" in alert_mail.subject
    # Nothing left to reap: never a crash loop.
    assert workers.reap_dead_claims() == 0


def test_a_claim_whose_process_is_alive_is_left_to_the_claim_timeout(pending_import):
    # This test process: alive, and no django-q2 worker. Whether it is the claimer or a
    # process that reuses its pid cannot be told; the claim timeout ends a wrong claim.
    live = f"{workers.host()}:{os.getpid()}"
    claim_as(pending_import, live)

    assert workers.reap_dead_claims() == 0

    pending_import.refresh_from_db()
    assert (pending_import.status, pending_import.claimed_by, pending_import.crashes) == (
        Status.RUNNING,
        live,
        0,
    )


def test_a_starting_worker_reaps_claims_made_under_its_own_pid_by_an_earlier_process(
    pending_import,
):
    # A new worker holds no claim yet: one in its name is a dead predecessor's.
    claim_as(pending_import, workers.worker_id())

    assert workers.reap_dead_claims(at_spawn=True) == 1

    pending_import.refresh_from_db()
    assert (pending_import.status, pending_import.crashes) == (Status.FAILED, 1)


def test_claims_of_other_hosts_and_of_other_claimers_are_not_judged(pending_import, make_message):
    claim_as(pending_import, f"another-{workers.host()}:{dead_pid()}")
    message = make_message()
    assert MESSAGE_WORK.claim(pk=message.pk, worker="w1")

    assert workers.reap_dead_claims(at_spawn=True) == 0

    pending_import.refresh_from_db()
    message.refresh_from_db()
    assert pending_import.status == Status.RUNNING
    assert message.status == InboundMessage.Status.PROCESSING


def test_a_dead_workers_message_is_reaped_too_and_retried_after_its_first_crash(make_message):
    message = make_message()
    assert MESSAGE_WORK.claim(pk=message.pk, worker=f"{workers.host()}:{dead_pid()}")

    assert workers.reap_dead_claims() == 1

    message.refresh_from_db()
    assert (message.status, message.crashes) == (InboundMessage.Status.RETRYABLE, 1)


def test_a_zombie_process_is_dead_and_a_running_one_alive():
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert workers.pid_alive(running.pid)
        # Exited but not yet waited for: a zombie, which os.kill(pid, 0) still finds.
        stat = Path(f"/proc/{exited.pid}/stat")
        wait_until(lambda: stat.read_text().rpartition(")")[2].split()[0] == "Z", 30, "a zombie")
        assert not workers.pid_alive(exited.pid)
    finally:
        running.kill()
        running.wait()
        exited.wait()
    assert not workers.pid_alive(exited.pid)


def test_a_worker_starting_caps_its_memory_so_a_runaway_allocation_is_a_memory_error():
    # In a process of its own: the cap cannot be lifted from the test process again.
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    url = f"postgres://{auth}@{s['HOST'] or 'localhost'}:{s['PORT'] or 5432}/{s['NAME']}"
    script = textwrap.dedent(
        """
        import resource
        import django
        django.setup()
        from django_q.signals import post_spawn
        post_spawn.send(sender="django_q", proc_name="Process-test")
        print("limit", resource.getrlimit(resource.RLIMIT_AS)[0])
        try:
            block = bytearray(1024 * 2**20)
        except MemoryError:
            print("MemoryError")
        """
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": url,
        "PRICEFEED_WORKER_MEMORY_LIMIT": str(512 * 2**20),
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [f"limit {512 * 2**20}", "MemoryError"]
    assert "worker started" in done.stderr


def test_no_memory_limit_when_the_setting_is_zero(settings):
    settings.PRICEFEED_WORKER_MEMORY_LIMIT = 0
    assert workers.apply_memory_limit() is None


def test_the_redis_broker_without_its_client_library_is_a_check_error(settings, monkeypatch):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": "redis://:secret@127.0.0.1:6379/0"}
    monkeypatch.setitem(sys.modules, "redis", None)  # as if not installed: import fails

    (error,) = workers.check_broker()

    assert error.id == "core.E003"
    assert "redis package" in error.msg
    assert "pricefeed[redis]" in error.hint
    assert "secret" not in error.msg + error.hint


def test_the_database_broker_needs_no_redis(settings, monkeypatch):
    settings.Q_CLUSTER = {k: v for k, v in settings.Q_CLUSTER.items() if k != "redis"}
    monkeypatch.setitem(sys.modules, "redis", None)

    assert workers.check_broker() == []
