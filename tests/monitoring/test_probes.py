"""/healthz and /readyz as orchestrators call them: plain HTTP, any Host, no session,
under production settings (HTTPS redirect on, one allowed host)."""

from __future__ import annotations

import logging

import pytest
from django.db import connection, connections
from django.db.migrations.recorder import MigrationRecorder

from .conftest import POD_HOST

ALL_OK = {
    "status": "ok",
    "checks": {"database": "ok", "migrations": "ok", "broker": "ok"},
}


def probe_log(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "monitoring.probes"]


def assert_not_cached(response) -> None:
    assert "no-store" in response["Cache-Control"]
    assert "max-age=0" in response["Cache-Control"]


# -- /healthz ----------------------------------------------------------------------------


def test_healthz_answers_plain_http_from_any_host_without_touching_the_database(client, production):
    # No django_db mark: a database query would raise here.
    response = client.get("/healthz", HTTP_HOST=POD_HOST)

    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert response["Content-Type"].startswith("text/plain")
    assert_not_cached(response)
    assert not response.cookies


def test_the_same_request_elsewhere_is_refused_or_redirected(client, production):
    # What the probes are spared: the host check and the HTTPS redirect.
    assert client.get("/admin/login/", HTTP_HOST=POD_HOST).status_code == 400
    redirected = client.get("/admin/login/", HTTP_HOST="pricefeed.example.com")
    assert redirected.status_code == 301
    assert redirected["Location"] == "https://pricefeed.example.com/admin/login/"


def test_healthz_answers_head_and_refuses_other_methods_without_csrf(client, production):
    head = client.head("/healthz", HTTP_HOST=POD_HOST)
    post = client.post("/healthz", HTTP_HOST=POD_HOST)

    assert head.status_code == 200
    assert head.content == b""
    # 405 from the probe, not CSRF's 403: nothing but the probe looked at the request.
    assert post.status_code == 405
    assert post["Allow"] == "GET, HEAD"


def test_only_the_exact_paths_are_probes(client, production):
    assert client.get("/healthz/", HTTP_HOST=POD_HOST).status_code == 400
    assert client.get("/healthz", HTTP_HOST="pricefeed.example.com", secure=True).status_code == 200


# -- /readyz -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_readyz_is_200_with_every_check_ok(client, production):
    response = client.get("/readyz", HTTP_HOST=POD_HOST)

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json() == ALL_OK
    assert_not_cached(response)
    assert not response.cookies


@pytest.mark.django_db
def test_readyz_is_503_naming_migrations_when_one_is_not_applied(client, production, caplog):
    MigrationRecorder(connection).migration_qs.filter(
        app="access", name="0003_audit_records_kept"
    ).delete()

    with caplog.at_level(logging.INFO, logger="monitoring.probes"):
        response = client.get("/readyz", HTTP_HOST=POD_HOST)

    assert response.status_code == 503
    assert response.json() == {
        "status": "failed",
        "failed": ["migrations"],
        "checks": {"database": "ok", "migrations": "failed", "broker": "ok"},
    }
    # Why, for the operator: in the log, once, not in the answer.
    assert probe_log(caplog) == [
        "readiness check migrations failed: CheckFailed: 1 migration(s) not applied, "
        "the first access.0003_audit_records_kept"
    ]
    assert "access" not in response.content.decode()


@pytest.mark.django_db
def test_a_failing_check_is_logged_when_it_fails_and_when_it_recovers(client, caplog):
    recorder = MigrationRecorder(connection)
    with caplog.at_level(logging.INFO, logger="monitoring.probes"):
        client.get("/readyz")
        recorder.migration_qs.filter(app="access", name="0003_audit_records_kept").delete()
        client.get("/readyz")
        client.get("/readyz")
        recorder.record_applied("access", "0003_audit_records_kept")
        assert client.get("/readyz").status_code == 200

    messages = probe_log(caplog)
    assert len(messages) == 2, messages
    assert messages[0].startswith("readiness check migrations failed: ")
    assert messages[1] == "readiness check migrations ok again"


@pytest.mark.django_db
def test_readyz_is_503_naming_the_broker_when_redis_refuses_and_never_shows_its_password(
    client, production, settings, closed_port, caplog
):
    password = "Sup3r-s3cret-broker-pw"
    cluster = {k: v for k, v in settings.Q_CLUSTER.items() if k != "orm"}
    settings.Q_CLUSTER = cluster | {"redis": f"redis://:{password}@127.0.0.1:{closed_port}/0"}

    with caplog.at_level(logging.INFO, logger="monitoring.probes"):
        response = client.get("/readyz", HTTP_HOST=POD_HOST)

    assert response.status_code == 503
    assert response.json() == {
        "status": "failed",
        "failed": ["broker"],
        "checks": {"database": "ok", "migrations": "ok", "broker": "failed"},
    }
    assert password not in response.content.decode()
    # A real connection was refused (not a missing client library), and the log line
    # saying so carries no password either.
    [line] = probe_log(caplog)
    assert line.startswith("readiness check broker failed: ConnectionError")
    assert str(closed_port) in line
    assert password not in caplog.text


def test_readyz_is_503_naming_the_database_when_it_refuses_connections(
    client, production, closed_port, django_db_blocker, monkeypatch, caplog
):
    # The real default connection, pointed at a port that refuses: no mock in between.
    conn = connections["default"]
    with django_db_blocker.unblock():
        conn.close()
        monkeypatch.setitem(conn.settings_dict, "HOST", "127.0.0.1")
        monkeypatch.setitem(conn.settings_dict, "PORT", str(closed_port))
        try:
            with caplog.at_level(logging.INFO, logger="monitoring.probes"):
                response = client.get("/readyz", HTTP_HOST=POD_HOST)
        finally:
            conn.close()

    assert response.status_code == 503
    assert response.json() == {
        "status": "failed",
        "failed": ["database", "migrations", "broker"],  # the ORM broker is the database
        "checks": {"database": "failed", "migrations": "failed", "broker": "failed"},
    }
    assert "OperationalError" in caplog.text
    assert str(closed_port) not in response.content.decode()
