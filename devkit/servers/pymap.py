"""A throwaway pymap IMAP server with its in-memory ``dict`` backend.

pymap is pure Python and installed with the project's dev dependencies, so it works where
Dovecot is not installed. Everything lives in memory: stopping the server loses all mail.
The single demo user starts with an empty INBOX (UIDs begin at 101) that can be selected,
appended to, searched and IDLEd on; ``--demo-data`` is not needed for that. Logins take
about 0.3 s because pymap derives the password hash with PBKDF2 every time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path
from types import TracebackType

from devkit.servers import (
    LOCALHOST,
    DevServerError,
    ServerResources,
    StartError,
    free_port,
    kill_process_group,
    start_server_process,
)

__all__ = ["PymapError", "PymapServer", "pymap_executable"]

START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0


class PymapError(DevServerError):
    """Raised when pymap cannot be found or is used wrongly."""


def pymap_executable() -> list[str]:
    """The command that starts pymap: this interpreter running pymap_main.py, which keeps
    pymap's connection tasks alive (see there)."""
    if importlib.util.find_spec("pymap") is None:
        raise PymapError("pymap is not installed (pip install -e '.[dev]')")
    # -P: the script's folder (which holds this module, also named pymap) stays off
    # sys.path.
    return [sys.executable, "-P", str(Path(__file__).with_name("pymap_main.py"))]


class PymapServer:
    """Runs ``pymap --no-tls ... dict`` on a free port of 127.0.0.1 with one demo user.

    As a context manager it starts on entry, and stops and removes its log directory on
    exit::

        with PymapServer() as server:
            append_message(server.host, server.port, server.user, server.password, raw)
    """

    def __init__(self, user: str = "pricefeed", password: str = "secret") -> None:
        self.user = user
        self.password = password
        self._executable = pymap_executable()
        self._port = free_port()
        self._has_started = False
        self._dir = Path(tempfile.mkdtemp(prefix="pricefeed-pymap-"))
        self._resources = ServerResources(self._dir)
        self._finalizer = weakref.finalize(self, self._resources.release)

    @property
    def host(self) -> str:
        """Returns the address the server listens on (always 127.0.0.1)."""
        return LOCALHOST

    @property
    def port(self) -> int:
        """Returns the IMAP port."""
        return self._port

    @property
    def log_path(self) -> Path:
        """Returns the file that receives pymap's stdout and stderr."""
        return self._dir / "pymap.log"

    @property
    def running(self) -> bool:
        """Tells whether the pymap process is alive."""
        process = self._resources.process
        return process is not None and process.poll() is None

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Launches pymap and waits for its IMAP greeting.

        Raises :class:`~devkit.servers.StartError` with the end of pymap's output if
        it exits or does not greet within ``timeout`` seconds. If another process took the
        port picked at construction, the first start moves to a new port.
        """
        if self._resources.process is not None:
            raise PymapError("pymap is already running")
        # pymap puts FQDN (else the host name, possibly slow to resolve) into its greeting.
        environment = {**os.environ, "FQDN": "localhost"}
        attempts = 1 if self._has_started else 3
        for attempt in range(1, attempts + 1):
            try:
                self._resources.process = start_server_process(
                    "pymap",
                    self._command(),
                    port=self._port,
                    log_path=self.log_path,
                    cwd=self._dir,
                    env=environment,
                    timeout=timeout,
                )
            except StartError as exc:
                if not exc.port_taken or attempt == attempts:
                    raise
                self._port = free_port()
            else:
                self._has_started = True
                return

    def stop(self) -> None:
        """Stops pymap with SIGTERM, or SIGKILL after 5 s; calling it again is harmless."""
        process, self._resources.process = self._resources.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=STOP_TIMEOUT)
        kill_process_group(process)

    def cleanup(self) -> None:
        """Stops pymap and removes the directory with its log.

        Also happens when the object is garbage-collected or the interpreter exits.
        """
        self.stop()
        self._finalizer()

    def __enter__(self) -> PymapServer:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    def _command(self) -> list[str]:
        """Returns pymap's command line."""
        return [
            *self._executable,
            "--no-tls",
            "--host",
            LOCALHOST,
            "--port",
            str(self._port),
            "dict",
            # One argument each: a generated password may begin with "-", which
            # argparse would take for an option if it stood alone.
            f"--demo-user={self.user}",
            f"--demo-password={self.password}",
        ]
