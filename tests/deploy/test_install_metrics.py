"""The installed package's metrics in motion: gunicorn, ``django-admin listen_mail`` and
``django-admin qcluster`` as the units run them (DEBUG off, the documented environment,
one PROMETHEUS_MULTIPROC_DIR for all), a real IMAP server, one price list mailed: the
``pricefeed_`` series of /metrics and ``pricefeed_status --json`` change with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devkit.servers import ImapAppender
from devkit.servers.dovecot import DovecotServer
from devkit.servers.processes import wait_until
from tests.integration.support import price_email
from tests.requirements import require_dovecot

from .support import Gunicorn, run, unit_command
from .test_install import METRICS_TOKEN, production_environment

pytestmark = pytest.mark.integration

POD = {"Host": "10.42.0.17:8000"}
SCRAPE = {**POD, "Authorization": f"Bearer {METRICS_TOKEN}"}
# The mailbox and its config, made in the deployment's database as an operator would
# in the admin: argv is host, port.
SETUP = """
import sys, django
django.setup()
from mailboxes.models import Mailbox
from pricefeed.models import PriceListConfig
mailbox = Mailbox.objects.create(
    name="prices", host=sys.argv[1], port=int(sys.argv[2]), security="plain",
    username="pricefeed", password="secret",
)
PriceListConfig.objects.create(
    mailbox=mailbox, name="acme", sender_pattern="*@acme.test", filename_pattern="*.csv"
)
"""


class Daemon:
    """A long-running command of a unit (ExecStart), in a process group of its own,
    logging to a file; ``stop`` ends the whole group, SIGKILL after a grace."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, name: str) -> None:
        self.argv = argv
        self.log_path = cwd / f"{name}.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                env=dict(env),
                cwd=cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, grace: float) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(grace)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            # Whatever is left of the group (django-q2's workers): as KillMode=mixed.
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)


@pytest.fixture
def dovecot():
    require_dovecot()
    server = DovecotServer()
    server.start()
    yield server
    server.cleanup()


def scrape(server: Gunicorn) -> dict[tuple[str, tuple], float]:
    response = server.get("/metrics", SCRAPE)
    assert response.status == 200, response.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def status(django_admin: str, env, cwd) -> dict:
    # Not run(): its exit status says what is wrong (8 before a listener runs).
    result = subprocess.run(
        [django_admin, "pricefeed_status", "--json"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout, result.stderr
    return json.loads(result.stdout)


def test_installed_processes_share_their_metrics_and_one_message_moves_them(
    installed, deploy_database, tmp_path, dovecot
):
    env = production_environment(
        tmp_path,
        deploy_database,
        # The test's Dovecot: loopback, plain text (documented in the environment file).
        PRICEFEED_IMAP_ALLOWED_NETWORKS="127.0.0.0/8",
        PRICEFEED_IMAP_ALLOW_PLAIN="true",
    )
    metrics_dir = Path(env["PROMETHEUS_MULTIPROC_DIR"])
    cwd = tmp_path / "run"
    cwd.mkdir()
    django_admin = str(installed.bin / "django-admin")
    run([django_admin, "migrate", "--noinput"], env, cwd)
    # python -c takes its arguments after the code.
    run([str(installed.bin / "python"), "-c", SETUP, dovecot.host, str(dovecot.port)], env, cwd)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", installed.venv, bind=bind)

    succeeded = ("pricefeed_imports_finished_total", (("status", "SUCCEEDED"),))
    rows = ("pricefeed_import_rows_stored_total", ())
    arrivals = ("pricefeed_message_arrival_to_recorded_seconds_count", ())
    end_to_end = ("pricefeed_import_end_to_end_seconds_count", ())
    recorded = ("pricefeed_messages_recorded_total", (("status", "RECEIVED"),))
    connections = ("pricefeed_imap_connections_total", (("mailbox", "prices"),))
    done = ("pricefeed_messages", (("status", "DONE"),))
    imports_succeeded = ("pricefeed_imports", (("status", "SUCCEEDED"),))
    daemons: list[Daemon] = []
    try:
        with Gunicorn(command, env, cwd) as server:
            before = scrape(server)
            status_before = status(django_admin, env, cwd)
            listener = Daemon(
                unit_command("pricefeed-listener.service", "ExecStart", installed.venv),
                env,
                cwd,
                "listener",
            )
            daemons.append(listener)
            workers = Daemon(
                unit_command("pricefeed-workers.service", "ExecStart", installed.venv),
                env,
                cwd,
                "workers",
            )
            daemons.append(workers)
            wait_until(
                lambda: scrape(server).get(connections, 0) == 1,
                60,
                "the listener connected (pricefeed_imap_connections_total)",
                on_timeout=lambda: listener.log() + workers.log(),
            )
            appended = time.time()
            with ImapAppender(dovecot.host, dovecot.port, "pricefeed", "secret") as appender:
                appender.append(price_email(subject="Prices for the metrics"))
            wait_until(
                lambda: scrape(server).get(succeeded, 0) == 1,
                90,
                "imports_finished{status=SUCCEEDED} 1",
                interval=0.5,
                on_timeout=lambda: listener.log() + workers.log() + server.log(),
            )
            after = scrape(server)
            status_after = status(django_admin, env, cwd)
    finally:
        for daemon in daemons:
            # django-q2 may deadlock in its SIGTERM handler (django-q2#346): the workers
            # are killed at once, their shutdown is not what this test is about.
            daemon.stop(grace=15 if daemon.argv[-1] == "listen_mail" else 0)

    # Before: nothing happened yet.
    assert before[("pricefeed_state_up", ())] == 1
    assert before.get(succeeded, 0) == 0
    assert before[rows] == 0
    assert before[arrivals] == 0
    assert (before[done], before[imports_succeeded]) == (0, 0)
    # After one message: events counted by listen_mail and by a django-q2 worker, read
    # by a gunicorn worker from the shared directory; the state from the database.
    assert after[succeeded] == 1
    assert after[rows] == 1  # price_email's CSV has one row
    assert after[recorded] == 1
    assert after[arrivals] == 1
    assert (
        0
        <= after[("pricefeed_message_arrival_to_recorded_seconds_sum", ())]
        <= (time.time() - appended + 1)
    )
    assert after[end_to_end] == 1
    assert after[("pricefeed_import_parse_seconds_count", ())] == 1
    assert (after[done], after[imports_succeeded]) == (1, 1)
    assert after[("pricefeed_listener_instances", (("state", "live"),))] == 1
    # Several processes wrote their own files there (gunicorn's, the listener's, the
    # workers').
    assert len(list(metrics_dir.glob("*.db"))) >= 3, sorted(metrics_dir.iterdir())
    # pricefeed_status tells the same story.
    assert status_before["messages"]["by_status"]["DONE"] == 0
    assert status_before["imports"]["by_status"]["SUCCEEDED"] == 0
    assert status_after["messages"]["by_status"]["DONE"] == 1
    assert status_after["imports"]["by_status"]["SUCCEEDED"] == 1
    assert [i["state"] for i in status_after["instances"]] == ["live"]
    assert status_after["exit_code"] == 0, status_after["problems"]
    assert server.returncode == 0, server.log()[-3000:]
    assert "Traceback" not in listener.log(), listener.log()[-3000:]
