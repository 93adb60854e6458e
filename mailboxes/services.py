"""What the listener last saw of a mailbox's server, and *Test connection*: requested in
admin, run by a django-q2 worker, its result kept on the mailbox, for operators."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now

from core.dbtime import db_now_minus
from core.texts import stored, text_of

from .exceptions import ImapError
from .imap import ConnectionSettings, probe_connection
from .models import Mailbox

logger = logging.getLogger(__name__)

TEST_TASK = "mailboxes.tasks.mailbox_test_connection"


def connection_settings(mailbox: Mailbox) -> ConnectionSettings:
    return ConnectionSettings(
        host=mailbox.host,
        port=mailbox.port,
        security=mailbox.security,
        username=mailbox.username,
        password=mailbox.password,
        folder=mailbox.folder,
        connect_timeout=settings.PRICEFEED_IMAP_CONNECT_TIMEOUT,
        timeout=settings.PRICEFEED_IMAP_TIMEOUT,
    )


def mailbox_report_connected(*, mailbox_id: int) -> None:
    Mailbox.objects.filter(pk=mailbox_id).update(
        last_connected_at=Now(), last_error="", last_error_text={}, last_error_at=None
    )


def mailbox_report_error(*, mailbox_id: int, error: str) -> None:
    """Records ``error`` (``imap.describe_error``'s line: a ``texts.Text`` is kept
    translatable too) as the mailbox's last error."""
    Mailbox.objects.filter(pk=mailbox_id).update(
        **stored("last_error", error, limit=2000),
        last_error_at=Now(),
    )


def pending_test_seconds() -> float:
    """How long a requested test counts as pending: django-q2's task timeout. A test
    not finished by then was killed or never ran (no worker), and may be asked again."""
    return float(settings.Q_CLUSTER["timeout"])


def enqueue_connection_test(mailbox_id: int) -> None:
    from django_q.tasks import async_task

    async_task(TEST_TASK, mailbox_id, task_name=f"test_connection {mailbox_id}")


def _enqueue_test(mailbox_id: int) -> None:
    enqueue_connection_test(mailbox_id)  # looked up at call time: tests replace it


def mailbox_tests_request(*, mailbox_ids: Iterable[int]) -> list[int]:
    """Asks a worker to test each mailbox's connection: marks the test requested,
    clears the last result and enqueues the task after commit. A mailbox whose test is
    pending (requested less than ``pending_test_seconds()`` ago, not finished) is left
    as it is. Returns the ids queued."""
    startable = (
        Q(test_requested_at=None)
        | Q(test_finished_at__isnull=False)
        | Q(test_requested_at__lte=db_now_minus(pending_test_seconds()))
    )
    queued = []
    for mailbox_id in mailbox_ids:
        marked = Mailbox.objects.filter(startable, pk=mailbox_id).update(
            test_requested_at=Now(),
            test_finished_at=None,
            test_succeeded=None,
            test_result="",
            test_result_text={},
        )
        if marked:
            queued.append(mailbox_id)
            transaction.on_commit(functools.partial(_enqueue_test, mailbox_id))
    return queued


def mailbox_test_run(*, mailbox_id: int) -> bool | None:
    """Runs a requested connection test (``imap.probe_connection``: the connect and read
    timeouts of the settings, the address policy, no peer's text before login) and
    writes its result. Returns whether it succeeded; None when no test was pending (the
    mailbox is gone, or a redelivered task finds it done)."""
    mailbox = Mailbox.objects.filter(
        pk=mailbox_id, test_requested_at__isnull=False, test_finished_at=None
    ).first()
    if mailbox is None:
        return None
    try:
        result, succeeded = probe_connection(connection_settings(mailbox)), True
    except ImapError as exc:
        result, succeeded = text_of(exc), False
    written = Mailbox.objects.filter(
        pk=mailbox_id, test_requested_at=mailbox.test_requested_at, test_finished_at=None
    ).update(
        test_finished_at=Now(),
        test_succeeded=succeeded,
        **stored("test_result", result, limit=2000),
    )
    extra = {"action": "connection_tested", "mailbox_id": mailbox_id, "mailbox_name": mailbox.name}
    if not written:
        # A duplicate delivery finished first, or the test was asked again meanwhile.
        logger.info("connection test result dropped: no longer pending", extra=extra)
        return None
    logger.info("connection test %s: %s", "passed" if succeeded else "failed", result, extra=extra)
    return succeeded
