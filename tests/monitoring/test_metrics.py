"""/metrics: Prometheus series behind a bearer token, answered before the HTTPS
redirect and the host check; state gauges read from the database at scrape time and
event metrics counted where things happen."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import OperationalError
from django.test import Client
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from core import metrics as core_metrics
from mailboxes import leases
from mailboxes.models import InboundMessage
from monitoring import status
from pricefeed.models import PriceImport
from tests import factories
from tests.integration.support import ROOT
from tests.monitoring.conftest import POD_HOST

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-0123456789"
CSV = b"sku;price\nA-1;10,50\nA-2;3\n"


@pytest.fixture
def token(production):
    production.PRICEFEED_METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(headers: dict[str, str] | None = None, method: str = "get"):
    """A scrape as Prometheus makes it: plain HTTP, the pod's address as Host."""
    client = Client()
    return getattr(client, method)("/metrics", HTTP_HOST=POD_HOST, headers=headers or {})


def series(headers: dict[str, str] | None = None) -> dict[tuple[str, tuple], float]:
    """Every sample of one authorised scrape: (name, sorted labels) -> value."""
    response = scrape(headers or {"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.content
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def test_with_the_token_answers_pricefeed_series_over_plain_http_to_any_host(token):
    response = scrape({"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "no-store" in response["Cache-Control"]
    text = response.content.decode()
    assert "pricefeed_state_up 1.0" in text
    assert 'pricefeed_messages{status="RECEIVED"} 0.0' in text
    assert "pricefeed_import_rows_stored_total" in text


def test_without_the_token_is_401_and_names_the_scheme(token):
    response = scrape()

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"pricefeed_" not in response.content


@pytest.mark.parametrize(
    "authorization", [f"Bearer {TOKEN}x", "Bearer wrong", f"Bearer {TOKEN[:-1]}"]
)
def test_a_wrong_token_is_403(token, authorization):
    response = scrape({"Authorization": authorization})

    assert response.status_code == 403
    assert b"pricefeed_" not in response.content


def test_another_scheme_is_401(token):
    assert scrape({"Authorization": f"Basic {TOKEN}"}).status_code == 401


def test_with_debug_off_and_no_token_metrics_are_refused(production):
    production.PRICEFEED_METRICS_TOKEN = ""

    response = scrape()

    assert response.status_code == 403
    assert b"PRICEFEED_METRICS_TOKEN" in response.content


def test_with_debug_on_and_no_token_anyone_may_scrape(settings):
    settings.DEBUG = True
    settings.PRICEFEED_METRICS_TOKEN = ""

    assert ("pricefeed_state_up", ()) in series({})


def test_head_answers_no_body_and_post_is_405(token):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    head = scrape(auth, method="head")
    post = scrape(auth, method="post")

    assert (head.status_code, head.content) == (200, b"")
    assert post.status_code == 405


@pytest.mark.usefixtures("imports_wait")
def test_gauges_follow_a_message_through_matching_and_its_import(token):
    mailbox = factories.create_mailbox()
    factories.create_config(mailbox)
    waiting = factories.create_message(mailbox, status=InboundMessage.Status.RECEIVED)
    done = ("pricefeed_messages", (("status", "DONE"),))
    pending = ("pricefeed_imports", (("status", "PENDING"),))
    succeeded = ("pricefeed_imports", (("status", "SUCCEEDED"),))
    backlog = ("pricefeed_backlog", (("work", "imports"),))
    before = series()

    factories.receive(mailbox, [("p.csv", CSV)])
    matched = series()
    factories.run_all(InboundMessage.objects.exclude(pk=waiting.pk).get())
    imported = series()

    assert before[("pricefeed_messages", (("status", "RECEIVED"),))] == 1
    assert before[("pricefeed_backlog", (("work", "messages"),))] == 1
    assert (before[done], before[pending], before[succeeded]) == (0, 0, 0)
    assert (matched[done], matched[pending], matched[backlog]) == (1, 1, 1)
    assert (imported[pending], imported[succeeded], imported[backlog]) == (0, 1, 0)


def test_listener_instances_and_their_leases_are_gauges(token):
    mailbox = factories.create_mailbox()
    leases.heartbeat(instance_id="host-a:1")
    leases.lease_acquire(mailbox_id=mailbox.pk, owner="host-a:1", ttl=600)
    factories.create_config(factories.create_mailbox(name="nobody listens"))
    factories.create_mailbox(name="no config yet")  # not to be listened to

    found = series()

    assert found[("pricefeed_listener_instances", (("state", "live"),))] == 1
    assert found[("pricefeed_listener_instances", (("state", "dead"),))] == 0
    assert found[("pricefeed_leases_held", (("listener", "host-a:1"),))] == 1
    assert found[("pricefeed_mailboxes_unlistened", ())] == 1


def test_a_finished_import_counts_its_rows_and_status_in_process(token):
    mailbox = factories.create_mailbox()
    factories.create_config(mailbox)
    rows = ("pricefeed_import_rows_stored_total", ())
    succeeded = ("pricefeed_imports_finished_total", (("status", "SUCCEEDED"),))
    end_to_end = ("pricefeed_import_end_to_end_seconds_count", ())
    parses = ("pricefeed_import_parse_seconds_count", ())
    before = series()

    factories.run_all(factories.receive(mailbox, [("p.csv", CSV)]))
    after = series()

    assert after[rows] - before[rows] == 2
    assert after[succeeded] - before.get(succeeded, 0) == 1
    assert after[end_to_end] - before[end_to_end] == 1
    assert after[parses] - before[parses] == 1
    # The same counters the process holds (no multiprocess directory in the tests).
    assert core_metrics.IMPORT_ROWS_STORED._value.get() == after[rows]


def test_an_unreadable_database_is_state_up_0_and_the_scrape_still_answers(token, monkeypatch):
    def unreachable() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(status, "status_report", unreachable)

    found = series()

    assert found[("pricefeed_state_up", ())] == 0
    assert not any(name == "pricefeed_messages" for name, _labels in found)
    assert ("pricefeed_import_rows_stored_total", ()) in found


def test_with_a_multiprocess_directory_events_of_every_process_are_added_up(
    token, tmp_path, monkeypatch
):
    # Two processes (as two django-q2 workers) count rows into the directory.
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for rows in (2, 3):
        code = f"from core import metrics; metrics.IMPORT_ROWS_STORED.inc({rows})"
        subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

    found = series()

    assert found[("pricefeed_import_rows_stored_total", ())] == 5
    assert found[("pricefeed_state_up", ())] == 1


def test_without_the_multiprocess_directory_a_process_counts_its_events_alone(tmp_path):
    # As `migrate` or `pricefeed_status` while the services (and the directory
    # pricefeed-metrics.service holds) are stopped: no traceback, the count kept in memory.
    missing = tmp_path / "metrics"
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(missing)}
    code = (
        "import os, django; django.setup()\n"
        "from core import metrics; metrics.IMPORT_ROWS_STORED.inc(3)\n"
        "print(os.environ.get('PROMETHEUS_MULTIPROC_DIR'), metrics.IMPORT_ROWS_STORED._value.get())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "3.0"]
    assert not missing.exists()


def test_a_failed_import_counts_as_failed_and_stores_no_rows(token):
    mailbox = factories.create_mailbox()
    factories.create_config(mailbox)
    rows = ("pricefeed_import_rows_stored_total", ())
    failed = ("pricefeed_imports_finished_total", (("status", "FAILED"),))
    before = series()

    (price_import,) = factories.run_all(factories.receive(mailbox, [("p.csv", b"no header\n")]))
    after = series()

    assert price_import.status == PriceImport.Status.FAILED
    assert after[failed] - before.get(failed, 0) == 1
    assert after[rows] == before[rows]


def test_a_process_file_still_being_made_is_left_out_of_the_scrape(token, tmp_path, monkeypatch):
    """A process creates its metric file empty and sizes it a moment later; a scrape in
    between answered 500 (struct.error reading the empty file)."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    code = "from core import metrics; metrics.IMPORT_ROWS_STORED.inc(4)"
    subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True)
    (tmp_path / "counter_999999.db").touch()  # as a starting process has just opened it
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

    found = series()
    port_text = generate_latest(core_metrics.events_registry()).decode()

    assert found[("pricefeed_import_rows_stored_total", ())] == 4
    assert "pricefeed_import_rows_stored_total 4.0" in port_text
