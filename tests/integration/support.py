"""Helpers for integration tests: real manage.py processes, mail builders, waiting."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from django.db import close_old_connections, connection

from pricefeed.devservers.samples import supplier_email

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


class ManagedProcess:
    """A ``manage.py`` command in its own process group, logging to a file."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.args = args
        self.env = env
        self.log_path = log_dir / f"{name}-{uuid.uuid4().hex[:6]}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), *self.args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.log()))

    def wait_for_log(self, pattern: str, timeout: float = 20.0, count: int = 1) -> None:
        wait_until(
            lambda: self.count(pattern) >= count,
            timeout,
            f"{self.name}: {pattern!r} x{count} in log",
            on_timeout=self.log,
        )

    def signal(self, signum: int) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signum)

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL of the whole group: no cleanup code runs."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)

    def stop(self, grace: float = 8.0) -> int | None:
        """SIGTERM, then SIGKILL of the group after ``grace`` seconds."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                return self.process.wait(grace)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                pass
        self.kill()
        return self.process.returncode


def wait_until(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    what: str = "condition",
    interval: float = 0.05,
    on_timeout: Callable[[], str] | None = None,
):
    deadline = time.monotonic() + timeout
    while True:
        close_old_connections()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f"\n--- context ---\n{on_timeout()[-6000:]}" if on_timeout else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")
        time.sleep(interval)


def price_email(
    *,
    attachments: Iterable[tuple[str, bytes]] = (("price.csv", b"sku;price\nA-1;10,50\n"),),
    **fields,
) -> bytes:
    """A supplier message from acme.test with a small CSV price list."""
    return supplier_email(attachments=attachments, **fields)
