"""A django-q2 worker killed under an import (or an import stopped by the task timeout):
the claim is reaped at once, the import ends FAILED at that first crash (it would read the
same bytes again), and the cluster goes on."""

from __future__ import annotations

import os
import signal

from core.workers import host
from mailboxes.processing import enqueue_processing
from pricefeed.models import PriceImport
from tests.factories import create_config, create_mailbox, create_message

from .support import price_email, wait_until

Status = PriceImport.Status


def _running_worker_pid(price_import: PriceImport, previous: str = "") -> int:
    """Waits for the import to be RUNNING under a claim other than ``previous``; returns
    the pid of the worker process named in the claim (``host:pid``)."""

    def claimed() -> str:
        price_import.refresh_from_db()
        running = price_import.status == Status.RUNNING and price_import.claimed_by != previous
        return price_import.claimed_by if running else ""

    claim = wait_until(claimed, 60, "the import running in a worker")
    claim_host, _, pid = claim.rpartition(":")
    assert claim_host == host()
    return int(pid)


def test_a_worker_killed_under_an_import_ends_it_failed_at_once_and_the_cluster_lives_on(
    transactional_db, manage
):
    mailbox = create_mailbox(enabled=False)  # nothing to listen to: no sweep runs
    create_config(mailbox, filename_pattern="*.csv")
    message = create_message(mailbox, price_email())
    # Every run of the import stops at the point, as a reader stuck in a huge file would.
    cluster = manage(
        "qcluster",
        env={"PRICEFEED_SLOW_AT": "import_running", "PRICEFEED_SLOW_SECONDS": "600"},
    )
    enqueue_processing([message.pk])
    price_import = wait_until(lambda: PriceImport.objects.filter(message=message).first(), 60)

    first = _running_worker_pid(price_import)
    os.kill(first, signal.SIGKILL)

    # No sweep runs, and the claim timeout is ten minutes away: the worker that
    # django-q2 starts in place of the dead one reaps the claim, and fails the import.
    wait_until(
        lambda: PriceImport.objects.filter(pk=price_import.pk, status=Status.FAILED).exists(),
        60,
        "the import FAILED at the first crash",
        on_timeout=cluster.log,
    )
    price_import.refresh_from_db()
    assert (price_import.crashes, price_import.attempts, price_import.claimed_by) == (1, 1, "")
    assert price_import.last_error.startswith(
        "the worker process died while running it once (a reader crashed or memory ran out)"
    )
    assert f":{first} died while running it" in price_import.last_error
    assert cluster.alive
    # Still working: a new worker took the place of the dead one.
    cluster.wait_for_log(r"worker started worker=\S+ memory_limit=\d+ reaped=1", 30)
    assert cluster.count(r"reincarnated worker \S+ after death") >= 1


def test_an_import_over_the_task_timeout_ends_failed(transactional_db, manage):
    mailbox = create_mailbox(enabled=False)
    create_config(mailbox, filename_pattern="*.csv")
    message = create_message(mailbox, price_email())
    fast = {"PRICEFEED_PROCESSING_RETRY_BASE": "1", "PRICEFEED_Q_TIMEOUT": "2"}
    cluster = manage(
        "qcluster",
        env={
            **fast,
            "PRICEFEED_SLOW_AT": "import_running",
            "PRICEFEED_SLOW_SECONDS": "600",
            "PRICEFEED_Q_RETRY": "30",
        },
    )
    manage("listen_mail", env=fast)
    enqueue_processing([message.pk])

    # django-q2 stops the run with its timeout (a SystemExit in the task): a crash.
    price_import = wait_until(
        lambda: PriceImport.objects.filter(message=message, status=Status.FAILED).first(),
        90,
        "the import FAILED after its timeout",
        on_timeout=cluster.log,
    )
    assert (price_import.crashes, price_import.attempts) == (1, 1)
    assert price_import.last_error.startswith(
        "the worker process died while running it once (a reader crashed or memory ran out)"
    )
    assert "stopped by TimeoutException" in price_import.last_error
    assert cluster.alive
