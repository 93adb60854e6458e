"""Fixtures that start real servers and real ``manage.py`` processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from devkit.servers import ImapAppender, free_port
from devkit.servers.dovecot import DovecotServer
from devkit.servers.pymap import PymapServer
from devkit.servers.redis import RedisServer
from mailboxes.models import Mailbox
from pricefeed.models import PriceListConfig
from tests.factories import create_config, create_mailbox
from tests.requirements import require_dovecot, require_redis

from .support import FAST_ENV, ManagedProcess, database_url, wait_until

REQUIRE_DOVECOT = os.environ.get("PRICEFEED_REQUIRE_DOVECOT") == "1"


@dataclass
class ImapServer:
    """A running IMAP server with one mailbox user, whatever its kind."""

    kind: str
    server: DovecotServer | PymapServer
    user: str = "pricefeed"
    password: str = "secret"
    _appender: ImapAppender | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    def append(self, raw: bytes, folder: str = "INBOX") -> int:
        if self._appender is None:
            self._appender = ImapAppender(self.host, self.port, self.user, self.password).open()
        return self._appender.append(raw, folder)

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None


def _dovecot() -> DovecotServer:
    require_dovecot()
    server = DovecotServer()
    server.start()
    return server


@pytest.fixture
def dovecot():
    server = _dovecot()
    wrapped = ImapServer("dovecot", server)
    yield wrapped
    wrapped.close()
    server.cleanup()


@pytest.fixture(params=["dovecot", "pymap"])
def imap_server(request):
    """Each test using it runs against Dovecot and against pymap."""
    if request.param == "dovecot":
        server = _dovecot()
    else:
        server = PymapServer(user="pricefeed", password="secret")
        server.start()
    wrapped = ImapServer(request.param, server)
    yield wrapped
    wrapped.close()
    server.cleanup()


@pytest.fixture
def make_mailbox(transactional_db):
    def make(server: ImapServer, name: str = "prices", **fields) -> Mailbox:
        values = {
            "host": server.host,
            "port": server.port,
            "security": Mailbox.Security.PLAIN,
            "username": server.user,
            "password": server.password,
        } | fields
        return create_mailbox(name=name, **values)

    return make


@pytest.fixture
def make_config():
    def make(mailbox: Mailbox, name: str = "acme", **fields) -> PriceListConfig:
        return create_config(mailbox, name=name, **({"filename_pattern": "*.csv"} | fields))

    return make


@pytest.fixture
def manage(transactional_db, tmp_path):
    """Starts ``manage.py`` commands against the test database; stops them afterwards."""
    started: list[ManagedProcess] = []
    base_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PRICEFEED_CRASH")},
        **FAST_ENV,
        "DATABASE_URL": database_url(),
        "PYTHONUNBUFFERED": "1",
    }

    def start(*args: str, env: dict[str, str] | None = None, name: str | None = None):
        process = ManagedProcess(
            name or args[0], list(args), {**base_env, **(env or {})}, tmp_path
        ).start()
        started.append(process)
        return process

    yield start
    for process in started:
        if process.args[0] == "qcluster":
            # django-q2 sometimes deadlocks in its SIGTERM handler (django-q2#346); its
            # shutdown is not what these tests are about.
            process.kill()
        else:
            process.stop()


@pytest.fixture
def smtp_server(tmp_path):
    """Starts the scriptable SMTP sink in its own process; returns (port, maildir)."""
    started = []

    def start(*args: str):
        port = free_port()
        path = tmp_path / f"received-{port}"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "devkit.servers.smtp",
                "--port",
                str(port),
                "--maildir",
                str(path),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_until(listening, 10, "SMTP server listening")
        return port, path

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


@pytest.fixture
def smtp_sink(smtp_server):
    return smtp_server()


@pytest.fixture
def redis_server():
    """A private redis-server (own port and directory, no persistence), stopped after the
    test (tests/requirements.py: skipped or failed where it is not installed)."""
    require_redis()
    server = RedisServer()
    try:
        yield server.start()
    finally:
        server.stop()
