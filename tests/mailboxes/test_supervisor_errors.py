"""How ``listen_mail``'s supervisor reports a failed step: a database that is unavailable
is a server problem (one ERROR line, no traceback, retried), anything else is a fault
here and keeps its traceback."""

from __future__ import annotations

import logging
import threading

import pytest
from django.db import OperationalError

from mailboxes import leases
from mailboxes.supervisor import Supervisor

# The supervisor closes its connection after a failed step: not inside a test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def run_once_failing(monkeypatch, settings, error: Exception) -> None:
    """Runs a supervisor whose first heartbeat raises ``error``; the next one stops it."""
    settings.PRICEFEED_SHUTDOWN_GRACE = 0
    settings.PRICEFEED_HEARTBEAT_INTERVAL = 0.05
    stop = threading.Event()
    beats = []
    real = leases.heartbeat

    def heartbeat(**kwargs):
        beats.append(kwargs)
        if len(beats) == 1:
            raise error
        stop.set()
        return real(**kwargs)

    monkeypatch.setattr(leases, "heartbeat", heartbeat)
    Supervisor(instance_id="host-e:1", stop=stop).run()
    assert len(beats) >= 2  # the failed step was tried again


def step_failures(caplog) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name.startswith("mailboxes.supervisor") and r.levelno >= logging.ERROR
    ]


def test_a_lost_database_session_is_one_error_line_without_a_traceback(
    monkeypatch, settings, caplog
):
    caplog.set_level(logging.INFO, logger="mailboxes")
    lost = OperationalError("consuming input failed: server closed the connection unexpectedly")

    run_once_failing(monkeypatch, settings, lost)

    [record] = step_failures(caplog)
    assert record.exc_info is None
    assert "the database is unavailable" in record.getMessage()
    assert "server closed the connection unexpectedly" in record.getMessage()
    assert any("recovered after 1 failed step" in r.getMessage() for r in caplog.records)


def test_any_other_failed_step_keeps_its_traceback(monkeypatch, settings, caplog):
    caplog.set_level(logging.INFO, logger="mailboxes")

    run_once_failing(monkeypatch, settings, ValueError("a fault in the step"))

    [record] = step_failures(caplog)
    assert record.exc_info is not None
    assert record.exc_info[0] is ValueError
