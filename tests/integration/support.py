"""Helpers for integration tests: real manage.py processes, mail builders, waiting."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from django.db import connection

from pricefeed.devservers.processes import ManagedProcess, wait_until
from pricefeed.devservers.samples import supplier_email

__all__ = ["FAST_ENV", "ROOT", "ManagedProcess", "database_url", "price_email", "wait_until"]

ROOT = Path(__file__).resolve().parents[2]

# Fast timings for processes under test; production defaults are in settings.py.
FAST_ENV = {
    "PRICEFEED_IMAP_BACKOFF_BASE": "0.2",
    "PRICEFEED_IMAP_BACKOFF_MAX": "1",
    "PRICEFEED_IMAP_TIMEOUT": "10",
    "PRICEFEED_IMAP_CONNECT_TIMEOUT": "5",
    "PRICEFEED_CONFIG_POLL_INTERVAL": "0.5",
    "PRICEFEED_HEARTBEAT_INTERVAL": "0.5",
    "PRICEFEED_LEASE_TTL": "5",
    "PRICEFEED_SWEEP_INTERVAL": "1",
    "PRICEFEED_SHUTDOWN_GRACE": "5",
    "PRICEFEED_Q_WORKERS": "2",
    "PRICEFEED_Q_POLL": "0.1",
    "PRICEFEED_Q_LOG_LEVEL": "INFO",
}


def database_url() -> str:
    """The URL of the test database this pytest process uses, for child processes."""
    s = connection.settings_dict
    auth = s["USER"] or ""
    if s.get("PASSWORD"):
        auth += f":{s['PASSWORD']}"
    host = s["HOST"] or "localhost"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{s['NAME']}"


def price_email(
    *,
    attachments: Iterable[tuple[str, bytes]] = (("price.csv", b"sku;price\nA-1;10,50\n"),),
    **fields,
) -> bytes:
    """A supplier message from acme.test with a small CSV price list."""
    return supplier_email(attachments=attachments, **fields)
