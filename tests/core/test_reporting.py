"""core.reporting: error reports (the mails to ADMINS) never show a password in a URL."""

from __future__ import annotations

import html
import logging
import sys

import pytest
from django.core import mail
from django.utils.log import AdminEmailHandler
from django.views.debug import ExceptionReporter, get_exception_reporter_filter

from core.reporting import MASK, UrlPasswordReporterFilter, mask_url_passwords

REDIS_URL = "redis://:redis-pass-8472@redis.internal:6379/0"
DATABASE_URL = "postgres://pricefeed:db-pass-5531@db.internal:5432/pricefeed"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (REDIS_URL, f"redis://:{MASK}@redis.internal:6379/0"),
        (DATABASE_URL, f"postgres://pricefeed:{MASK}@db.internal:5432/pricefeed"),
        # A raw "@" in the password: urllib splits at the last "@" of the authority.
        ("smtp+tls://u%40x.ru:p@ss@smtp.x.ru:587", f"smtp+tls://u%40x.ru:{MASK}@smtp.x.ru:587"),
        ("imap://user@example.com:pw@host", f"imap://user@example.com:{MASK}@host"),
        (f"failed: {REDIS_URL} then {DATABASE_URL}.", None),
    ],
)
def test_the_password_of_a_url_is_masked_and_the_rest_kept(text, masked):
    result = mask_url_passwords(text)

    assert "pass" not in result and "pw" not in result.split("@")[0]
    if masked is not None:
        assert result == masked


@pytest.mark.parametrize(
    "text",
    [
        "postgres://pricefeed@db.internal/pricefeed",  # no password
        "http://host:8080/path@anchor",  # a port, and an "@" past the authority
        "mailto:ops@example.com",
        "Operations <ops@example.com>",
    ],
)
def test_text_without_a_url_password_is_left_as_it_is(text):
    assert mask_url_passwords(text) == text


def test_django_uses_the_filter_for_error_reports():
    assert isinstance(get_exception_reporter_filter(None), UrlPasswordReporterFilter)


def test_settings_in_a_report_have_url_passwords_masked_whatever_their_name(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": REDIS_URL}
    settings.PRICEFEED_SOME_URLS = [DATABASE_URL, (REDIS_URL,)]

    safe = UrlPasswordReporterFilter().get_safe_settings()

    assert safe["Q_CLUSTER"]["redis"] == f"redis://:{MASK}@redis.internal:6379/0"
    assert "pass" not in repr(safe["PRICEFEED_SOME_URLS"])
    assert safe["Q_CLUSTER"]["name"] == "pricefeed"  # the rest as it was


class Connection:
    def __init__(self, url: str) -> None:
        self.url = url

    def __repr__(self) -> str:
        return f"<Connection {self.url}>"


def report_of_a_failure() -> str:
    """The HTML report of a failure in a frame with URLs in its variables (the text
    report shows no variables), unescaped."""

    def connect(url: str, options: dict[str, str], connection: Connection) -> None:
        raise ConnectionError("broker unreachable")

    try:
        connect(DATABASE_URL, {"broker": REDIS_URL}, Connection(REDIS_URL))
    except ConnectionError:
        reporter = ExceptionReporter(None, *sys.exc_info(), is_email=True)
        return html.unescape(reporter.get_traceback_html())
    raise AssertionError("no failure")


def test_local_variables_in_a_report_have_url_passwords_masked(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": REDIS_URL}

    text = report_of_a_failure()

    assert "redis-pass" not in text and "db-pass" not in text
    assert f"postgres://pricefeed:{MASK}@db.internal:5432/pricefeed" in text  # a string
    assert f"{{'broker': 'redis://:{MASK}@redis.internal:6379/0'}}" in text  # a dict
    assert f"<Connection redis://:{MASK}@redis.internal:6379/0>" in text  # an object


def test_the_error_mail_to_admins_has_no_url_password(settings):
    settings.ADMINS = [("Ops", "ops@example.com")]
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": REDIS_URL}
    secret_url = DATABASE_URL
    try:
        raise ConnectionError(f"cannot reach {secret_url.split('@')[1]}")
    except ConnectionError:
        record = logging.LogRecord(
            "test", logging.ERROR, __file__, 1, "failure", None, sys.exc_info()
        )
    AdminEmailHandler(include_html=True).emit(record)

    (sent,) = mail.outbox
    report = html.unescape(sent.alternatives[0][0])
    for text in (sent.body, report):
        assert "redis-pass" not in text and "db-pass" not in text
    assert f"redis://:{MASK}@redis.internal" in report  # the setting, masked
    assert f"postgres://pricefeed:{MASK}@db.internal" in report  # the local variable
