"""Throwaway IMAP servers for integration tests, benchmarks and the demo.

The servers live in :mod:`devkit.servers.dovecot` (a private Dovecot instance) and
:mod:`devkit.servers.pymap` (pymap's in-memory backend). This module holds what both of
them, and their users, share: picking a free port, waiting for the IMAP greeting, appending
messages over IMAP, and starting and reliably killing a server process.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from imapclient import IMAPClient

__all__ = [
    "LOOPBACK_IMAP_ENV",
    "DevServerError",
    "ImapAppender",
    "ServerResources",
    "StartError",
    "append_message",
    "free_port",
    "kill_process_group",
    "start_server_process",
    "wait_for_greeting",
]

LOCALHOST = "127.0.0.1"

# What pricefeed's processes need to reach these servers: they listen on loopback and
# speak plain text, which the settings refuse by default (mailboxes.addresses).
LOOPBACK_IMAP_ENV = {
    "PRICEFEED_IMAP_ALLOW_PLAIN": "true",
    "PRICEFEED_IMAP_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
}
CONNECT_TIMEOUT = 10.0
LOG_TAIL_LINES = 30

_APPENDUID = re.compile(rb"\[APPENDUID \d+ (\d+)\]", re.IGNORECASE)


class DevServerError(RuntimeError):
    """Raised when a throwaway server cannot be run or operated."""


class StartError(DevServerError):
    """Raised when a server process exits or does not greet in time.

    The message ends with the last lines of the server's log. ``port_taken`` tells whether
    the server failed because another process listens on its port.
    """

    def __init__(self, message: str, *, port_taken: bool = False) -> None:
        super().__init__(message)
        self.port_taken = port_taken


# -- ports and greetings ---------------------------------------------------------------


def free_port() -> int:
    """Returns a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


def wait_for_greeting(host: str, port: int, timeout: float = 15.0) -> None:
    """Connects to ``host:port`` until the server greets with ``* OK``.

    Raises :class:`TimeoutError` naming the address and the last problem seen when no
    greeting arrives within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last_problem = "no connection attempt made"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(
                f"no IMAP greeting from {host}:{port} within {timeout:.1f} s "
                f"(last problem: {last_problem})"
            )
        try:
            with socket.create_connection((host, port), timeout=min(remaining, 2.0)) as sock:
                line = _read_line(sock)
        except OSError as exc:
            last_problem = f"{type(exc).__name__}: {exc}"
        else:
            if line.startswith(b"* OK"):
                return
            last_problem = f"unexpected greeting {line[:200]!r}"
        time.sleep(min(0.02, max(deadline - time.monotonic(), 0)))


def _read_line(sock: socket.socket) -> bytes:
    """Reads from ``sock`` up to the first LF, or until the peer closes the connection."""
    data = b""
    while b"\n" not in data and len(data) < 65536:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].rstrip(b"\r")


# -- appending -------------------------------------------------------------------------


def _login(host: str, port: int, user: str, password: str) -> IMAPClient:
    """Returns an IMAPClient logged in as ``user``, with Nagle's algorithm switched off.

    imaplib sends an APPEND literal and its closing CRLF in two ``send()`` calls; with Nagle
    the CRLF waits for the server's delayed ACK, which costs ~44 ms per append on pymap.
    """
    client = IMAPClient(host, port, ssl=False, timeout=CONNECT_TIMEOUT)
    try:
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.login(user, password)
    except BaseException:
        client.shutdown()
        raise
    return client


def _close(client: IMAPClient) -> None:
    """Logs ``client`` out, and closes its socket even when LOGOUT fails."""
    try:
        client.logout()
    except Exception:
        client.shutdown()


def _append(client: IMAPClient, raw: bytes, folder: str) -> int:
    """Appends ``raw`` to ``folder`` and returns the new UID, or 0 without UIDPLUS."""
    response = client.append(folder, raw)
    if isinstance(response, str):
        response = response.encode()
    match = _APPENDUID.search(response or b"")
    return int(match.group(1)) if match else 0


def append_message(
    host: str, port: int, user: str, password: str, raw: bytes, folder: str = "INBOX"
) -> int:
    """Appends one message over a fresh IMAP connection and returns its UID.

    The UID comes from the server's APPENDUID response code; servers without UIDPLUS give 0.
    For many messages, :class:`ImapAppender` saves a login per message.
    """
    client = _login(host, port, user, password)
    try:
        return _append(client, raw, folder)
    finally:
        _close(client)


class ImapAppender:
    """Keeps one logged-in IMAP connection for appending many messages.

    Use it as a context manager::

        with ImapAppender(host, port, "pricefeed", "secret") as appender:
            uid = appender.append(raw)
    """

    def __init__(self, host: str, port: int, user: str, password: str) -> None:
        self.host = host
        self.port = port
        self.user = user
        self._password = password
        self._client: IMAPClient | None = None

    def open(self) -> ImapAppender:
        """Connects and logs in unless already connected; returns ``self``."""
        self._connection()
        return self

    def append(self, raw: bytes, folder: str = "INBOX") -> int:
        """Appends ``raw`` to ``folder`` and returns its UID (0 if the server gives none)."""
        return _append(self._connection(), raw, folder)

    def close(self) -> None:
        """Logs out and closes the connection; does nothing when not connected."""
        client, self._client = self._client, None
        if client is not None:
            _close(client)

    def _connection(self) -> IMAPClient:
        """Returns the logged-in client, connecting first if needed."""
        if self._client is None:
            self._client = _login(self.host, self.port, self.user, self._password)
        return self._client

    def __enter__(self) -> ImapAppender:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# -- server processes ------------------------------------------------------------------


def start_server_process(
    name: str,
    command: Sequence[str],
    *,
    port: int,
    log_path: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 15.0,
) -> subprocess.Popen[bytes]:
    """Starts ``command`` in its own process group and waits for its IMAP greeting.

    The process writes stdout and stderr to ``log_path``. Raises :class:`StartError`, after
    killing the process group, when the process exits or does not greet on 127.0.0.1:port
    within ``timeout`` seconds.
    """
    log_offset = log_path.stat().st_size if log_path.exists() else 0
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    problem = f"no greeting within {timeout:.0f} s"
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            problem = f"the process exited with status {code}"
            break
        try:
            wait_for_greeting(LOCALHOST, port, timeout=0.2)
        except TimeoutError:
            continue
        return process
    kill_process_group(process)
    output = _read_log(log_path, log_offset)
    kept = output.strip().splitlines()[-LOG_TAIL_LINES:]
    raise StartError(
        f"{name} did not start on {LOCALHOST}:{port}: {problem}.\n"
        f"Last lines of {log_path}:\n" + ("\n".join(kept) if kept else "(nothing logged)"),
        port_taken="address already in use" in output.lower(),
    )


def _read_log(path: Path, offset: int) -> str:
    """Returns the text of the log file ``path`` from byte ``offset`` on."""
    try:
        with path.open("rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"


def kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILLs the process group led by ``process`` and reaps the leader."""
    # Even when the leader has exited, other members of the group may still run.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


class ServerResources:
    """The process and directory of one server, released even if nobody calls cleanup.

    Servers register :meth:`release` with :func:`weakref.finalize`, so a server that is
    garbage-collected or still running when the interpreter exits is killed and its
    directory removed instead of being left behind.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    def kill(self) -> bool:
        """Kills the process group, if there is one; tells whether there was."""
        process, self.process = self.process, None
        if process is None:
            return False
        kill_process_group(process)
        return True

    def release(self) -> None:
        """Kills the process group and removes the directory."""
        self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)
