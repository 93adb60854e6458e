"""config.settings: the HTTPS-only defaults with DEBUG off, and their variables."""

from __future__ import annotations

import runpy
from pathlib import Path

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured

SETTINGS = Path(__file__).resolve().parents[2] / "config" / "settings.py"


@pytest.fixture
def settings_from(monkeypatch, tmp_path):
    """Evaluates config/settings.py afresh with exactly the given environment (no .env
    file, none of the test suite's defaults) and returns its settings."""

    def evaluate(**variables: str) -> dict[str, object]:
        environment = {
            "SECRET_KEY": "x" * 60,
            "DATABASE_URL": "postgres://pricefeed@127.0.0.1:5432/pricefeed",
            "PRICEFEED_VAR_DIR": str(tmp_path / "var"),
            **variables,
        }
        monkeypatch.setattr(environ.Env, "ENVIRON", environment)
        monkeypatch.setattr(environ.Env, "read_env", classmethod(lambda cls, *a, **k: None))
        return runpy.run_path(str(SETTINGS))

    return evaluate


HTTPS_ONLY = {
    "SECURE_SSL_REDIRECT": True,
    "SESSION_COOKIE_SECURE": True,
    "CSRF_COOKIE_SECURE": True,
    "SECURE_HSTS_SECONDS": 3600,
}


def https_settings(values: dict[str, object]) -> dict[str, object]:
    return {name: values[name] for name in HTTPS_ONLY}


def test_with_debug_off_the_admin_is_https_only_by_default(settings_from):
    values = settings_from()

    assert values["DEBUG"] is False
    assert https_settings(values) == HTTPS_ONLY
    assert "SECURE_PROXY_SSL_HEADER" not in values


def test_with_debug_on_plain_http_works(settings_from):
    values = settings_from(DEBUG="true")

    assert https_settings(values) == {
        "SECURE_SSL_REDIRECT": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
    }


def test_each_https_default_is_set_by_the_variable_of_its_name(settings_from):
    values = settings_from(
        SECURE_SSL_REDIRECT="false",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
        SECURE_HSTS_PRELOAD="true",
    )

    assert https_settings(values) == {
        "SECURE_SSL_REDIRECT": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 31536000,
    }
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert values["SECURE_HSTS_PRELOAD"] is True


def test_hsts_for_subdomains_and_preload_stay_off_unless_the_operator_sets_them(settings_from):
    values = settings_from()

    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert values["SECURE_HSTS_PRELOAD"] is False
    assert set(values["SILENCED_SYSTEM_CHECKS"]) >= {"security.W005", "security.W021"}


def test_the_proxy_ssl_header_is_read_as_header_and_value(settings_from):
    values = settings_from(SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")

    assert values["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")


@pytest.mark.parametrize("value", ["HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_PROTO,https,x"])
def test_a_proxy_ssl_header_without_its_value_stops_start_up(settings_from, value):
    with pytest.raises(ValueError, match="SECURE_PROXY_SSL_HEADER must be <header>,<value>"):
        settings_from(SECURE_PROXY_SSL_HEADER=value)


def test_secret_key_fallbacks_and_static_root_come_from_the_environment(settings_from, tmp_path):
    values = settings_from(SECRET_KEY_FALLBACKS="old-one,older-one", STATIC_ROOT="/srv/static")

    assert values["SECRET_KEY_FALLBACKS"] == ["old-one", "older-one"]
    assert str(values["STATIC_ROOT"]) == "/srv/static"
    assert settings_from()["STATIC_ROOT"] == tmp_path / "var" / "static"


@pytest.mark.parametrize(
    "url",
    ["sqlite:////tmp/pricefeed.sqlite3", "mysql://pricefeed@127.0.0.1/pricefeed", "nonsense"],
)
def test_a_database_other_than_postgresql_is_refused_at_start(settings_from, url):
    with pytest.raises(ImproperlyConfigured, match="runs on PostgreSQL only"):
        settings_from(DATABASE_URL=url)


def test_no_database_url_is_refused_at_start_with_what_to_set(settings_from):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL is not set"):
        settings_from(DATABASE_URL="")


def test_a_postgresql_url_gives_the_connection_settings(settings_from):
    database = settings_from(DATABASE_URL="postgres://pf:secret@db.internal:5433/prices")[
        "DATABASES"
    ]["default"]

    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["HOST"], database["PORT"], database["NAME"]) == ("db.internal", 5433, "prices")
    assert database["OPTIONS"]["connect_timeout"] == 10
    assert database["CONN_HEALTH_CHECKS"] is True


def test_trusted_proxies_are_read_as_addresses_and_networks(settings_from):
    values = settings_from(PRICEFEED_TRUSTED_PROXIES="127.0.0.1,::1,10.0.0.0/8")

    assert values["PRICEFEED_TRUSTED_PROXIES"] == ["127.0.0.1", "::1", "10.0.0.0/8"]
    assert values["AXES_CLIENT_IP_CALLABLE"] == "core.clientip.request_client_address"


def test_a_trusted_proxy_that_is_not_an_address_is_refused_at_start(settings_from):
    with pytest.raises(ImproperlyConfigured, match="PRICEFEED_TRUSTED_PROXIES: 'nginx'"):
        settings_from(PRICEFEED_TRUSTED_PROXIES="127.0.0.1,nginx")
