"""Real ``manage.py`` processes for integration tests and benchmarks: started in a
process group of their own, logging to a file, signalled, killed; and ``wait_until``."""

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

from django.db import close_old_connections

ROOT = Path(__file__).resolve().parent.parent.parent


class ManagedProcess:
    """A ``manage.py`` command in its own process group, logging to a file."""

    def __init__(
        self,
        name: str,
        args: list[str],
        env: dict[str, str],
        log_dir: Path,
        *,
        prefix: Iterable[str] = (),
        log_name: str | None = None,
    ) -> None:
        self.name = name
        self.args = args
        self.env = env
        self.prefix = list(prefix)  # e.g. ["faketime", "-f", "+1h"]
        self.log_path = log_dir / (log_name or f"{name}-{uuid.uuid4().hex[:6]}.log")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, extra_env: dict[str, str] | None = None) -> ManagedProcess:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*self.prefix, sys.executable, str(ROOT / "manage.py"), *self.args],
                cwd=ROOT,
                env={**self.env, **(extra_env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
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
        """SIGTERM (and SIGCONT, should it be frozen), then SIGKILL of the group after
        ``grace`` seconds."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                os.killpg(self.process.pid, signal.SIGCONT)
                return self.process.wait(grace)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                pass
        self.kill()
        return self.process.returncode


def _close_old_connections() -> None:
    """Django's, for a predicate that reads what other processes write; skipped where
    the caller may not use the database at all (pytest-django refuses a test without the
    db fixture, which a connection left open by an earlier test would otherwise meet)."""
    try:
        close_old_connections()
    except RuntimeError as exc:
        if "Database access not allowed" not in str(exc):
            raise


def wait_until(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    what: str = "condition",
    interval: float = 0.05,
    on_timeout: Callable[[], str] | None = None,
):
    """Polls ``predicate`` until it returns something true, which is returned; raises
    AssertionError with ``on_timeout()``'s text after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        _close_old_connections()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f"\n--- context ---\n{on_timeout()[-6000:]}" if on_timeout else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")
        time.sleep(interval)
