"""Helpers for the deployment tests: the documented environment and commands (read from
deploy/, so the tests run what an operator copies), a throwaway PostgreSQL database,
and gunicorn started and stopped as systemd would."""

from __future__ import annotations

import http.client
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devkit.servers import free_port
from tests.integration.support import database_server_url, database_url

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
ENV_FILE = DEPLOY / "pricefeed.env"
UNITS = DEPLOY / "systemd"
# Where the units and README put the virtualenv; the tests put theirs in its place.
UNIT_VENV = "/opt/pricefeed/venv"
# What every process of these tests gets besides the documented variables: a PATH.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


def documented_environment(**values: str) -> dict[str, str]:
    """The variables of deploy/pricefeed.env, each CHANGE-ME-bearing or host-specific one
    given a real value by ``values``, plus a PATH. Only variables the file documents can
    be given (set, or commented out as ``# NAME=...`` for the operator to set): a test
    needing another would be testing a setup no operator has."""
    documented: dict[str, str] = {}
    optional: set[str] = set()
    for line in ENV_FILE.read_text().splitlines():
        line = line.strip()
        commented = re.fullmatch(r"# ?([A-Z][A-Z0-9_]*)=\S*", line)
        if commented:
            optional.add(commented.group(1))
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition("=")
        documented[name] = shlex.split(value)[0] if value else ""
    undocumented = set(values) - set(documented) - optional
    assert not undocumented, f"not in deploy/pricefeed.env: {sorted(undocumented)}"
    environment = {**BASE_ENV, **documented, **values}
    left = [name for name, value in environment.items() if "CHANGE-ME" in value]
    assert not left, f"give these a value: {left}"
    return environment


def unit_setting(unit: str, key: str) -> str:
    """The value of ``key`` in deploy/systemd/``unit`` (the last one, as systemd reads)."""
    found = re.findall(rf"(?m)^{re.escape(key)}=(.*)$", (UNITS / unit).read_text())
    assert found, f"{unit} has no {key}="
    return found[-1].strip()


def unit_command(unit: str, key: str, venv: Path, *, bind: str | None = None) -> list[str]:
    """The command line of ``key`` (ExecStart, ExecStartPre) in ``unit``, with the venv
    of the units replaced by ``venv`` and gunicorn's ``--bind`` by ``bind``."""
    argv = shlex.split(unit_setting(unit, key))
    argv = [arg.replace(UNIT_VENV, str(venv), 1) for arg in argv]
    if bind is not None:
        argv[argv.index("--bind") + 1] = bind
    return argv


@contextmanager
def readable_directory(prefix: str) -> Iterator[Path]:
    """A new directory under /tmp that every user may enter and read (0755), removed
    afterwards: for what a process of another user reads, as an unprivileged service
    user or nginx's workers (pytest's temporary directories are their owner's alone)."""
    path = Path(tempfile.mkdtemp(prefix=f"pricefeed-{prefix}-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def recreate_database(name: str) -> str:
    """Drops and creates database ``name`` next to the test database; returns its URL."""
    import psycopg

    maintenance = database_server_url("postgres").replace("postgres://", "postgresql://", 1)
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_server_url(name)


def drop_database(name: str) -> None:
    import psycopg

    maintenance = database_server_url("postgres").replace("postgres://", "postgresql://", 1)
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = 300):
    """Runs a command to its end; fails the test with its output when it fails."""
    result = subprocess.run(
        list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, (
        f"{shlex.join(argv)} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    return result


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


class Gunicorn:
    """gunicorn from a unit's command line, on a free port of 127.0.0.1; stopped as
    systemd stops it (SIGTERM to the master), which must end it with exit status 0."""

    def __init__(
        self, argv_for_bind, env: Mapping[str, str], cwd: Path, log_dir: Path | None = None
    ) -> None:
        self.argv_for_bind = argv_for_bind  # bind address -> command line
        self.env = dict(env)
        self.cwd = cwd
        self.log_path = (log_dir or cwd) / "gunicorn.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.returncode: int | None = None

    def __enter__(self) -> Gunicorn:
        # A port free a moment ago may be taken by the time gunicorn binds it: then
        # gunicorn exits, and another port is tried.
        for _ in range(5):
            self.port = free_port()
            logged = len(self.log())
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    self.argv_for_bind(f"127.0.0.1:{self.port}"),
                    env=self.env,
                    cwd=self.cwd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if self._answers():
                return self
            self._kill()
            if "in use" not in self.log()[logged:]:
                break
        raise AssertionError(f"gunicorn did not answer:\n{self.log()[-6000:]}")

    def _kill(self) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def _answers(self, timeout: float = 60.0) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                self.get("/admin/login/")
                return True
            except OSError:
                time.sleep(0.1)
        return False

    def __exit__(self, *exc_info: object) -> None:
        self.returncode = self.stop()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, grace: float = 30.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self._kill()
                raise AssertionError(
                    f"gunicorn did not stop on SIGTERM within {grace}s:\n{self.log()[-3000:]}"
                ) from None
        return self.process.returncode

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Response:
        """One GET, redirects not followed."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path, headers=dict(headers or {}))
            response = conn.getresponse()
            return Response(response.status, response.headers, response.read())
        finally:
            conn.close()


def admin_over_plain_http(tmp_path: Path) -> dict[str, str]:
    """The environment of a web unit on the test database, DEBUG off, serving plain HTTP
    on loopback for a browser test, its static files collected: with no TLS proxy in
    front, the HTTPS-only defaults are turned off the documented way (the redirect, and
    cookies a browser keeps to HTTPS)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "DEBUG": "false",
        "STATIC_ROOT": str(tmp_path / "static"),
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
    }
    run([sys.executable, "manage.py", "collectstatic", "--noinput"], env, ROOT)
    return env
