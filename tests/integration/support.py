"""Helpers for integration tests: real manage.py processes, mail builders, waiting."""

from __future__ import annotations

import mailbox as mbox
import os
import re
import socket
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from devkit.hostile import Case, Rig
from devkit.samples import supplier_email
from devkit.servers.imapproxy import pump, shut
from devkit.servers.processes import ManagedProcess, wait_until

__all__ = [
    "FAST_ENV",
    "ROOT",
    "ManagedProcess",
    "TcpProxy",
    "WriteAudit",
    "database_url",
    "mailbox_line",
    "price_email",
    "received",
    "wait_until",
]

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
    "PRICEFEED_LIVENESS_WINDOW": "5",
    "PRICEFEED_SWEEP_INTERVAL": "1",
    "PRICEFEED_SHUTDOWN_GRACE": "5",
    "PRICEFEED_Q_WORKERS": "2",
    "PRICEFEED_Q_POLL": "0.1",
    "PRICEFEED_Q_LOG_LEVEL": "INFO",
}


def database_server_url(name: str) -> str:
    """A URL of database ``name`` on the test suite's PostgreSQL server."""
    s = connection.settings_dict
    auth = s["USER"] or ""
    if s.get("PASSWORD"):
        auth += f":{s['PASSWORD']}"
    host = s["HOST"] or "localhost"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{name}"


def database_url() -> str:
    """The URL of the test database this pytest process uses, for child processes."""
    return database_server_url(connection.settings_dict["NAME"])


def mailbox_line(mailbox: str, text: str = "") -> str:
    """A pattern for ManagedProcess.count and wait_for_log: one log line about the
    mailbox called ``mailbox`` (a listener's lines end with its context keys,
    ``mailbox_id=<id> mailbox_name=<name>`` and perhaps ``action=...``) whose message
    has ``text`` (a regex) in it."""
    return rf"(?m){text}.* mailbox_name={re.escape(mailbox)}(?: |$)"


def price_email(
    *,
    attachments: Iterable[tuple[str, bytes]] = (("price.csv", b"sku;price\nA-1;10,50\n"),),
    **fields,
) -> bytes:
    """A supplier message from acme.test with a small CSV price list."""
    return supplier_email(attachments=attachments, **fields)


class TcpProxy:
    """Forwards a local port to ``target``; ``cut()`` drops every connection and refuses
    new ones (a network partition), ``restore()`` lets them through again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.open = True
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pump, args=(a, b, bytes), daemon=True).start()

    def cut(self) -> None:
        self.open = False
        with self._lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                shut(s)
                s.close()

    def restore(self) -> None:
        self.open = True

    def close(self) -> None:
        self.cut()
        self.server.close()
        with self._lock:
            for pair in self.pairs:
                for s in pair:
                    s.close()


class WriteAudit:
    """Notes, in the database, every committed write of a recorded message or a checkpoint:
    which instance made it (its session's application_name) and what the mailbox's lease
    row said at that moment, in the writer's own transaction. A write made by anyone but
    the lease's owner, or under an expired lease, is a write the fence should have
    refused. Installed by triggers for the duration of one test."""

    TABLE = "test_write_audit"
    AUDITED = (
        ("mailboxes_inboundmessage", "uid", "INSERT"),
        ("mailboxes_mailboxcheckpoint", "last_uid", "INSERT OR UPDATE"),
    )

    def __init__(self) -> None:
        self.dsn = database_url().replace("postgres://", "postgresql://", 1)

    def _execute(self, sql: str, params=()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def install(self) -> WriteAudit:
        self.uninstall()
        self._execute(
            f"""
            CREATE TABLE {self.TABLE} (
                id bigserial PRIMARY KEY,
                at timestamptz NOT NULL DEFAULT clock_timestamp(),
                writer text NOT NULL,
                tbl text NOT NULL,
                mailbox_id bigint NOT NULL,
                uid bigint,
                owner text,
                token bigint,
                live boolean
            );
            CREATE FUNCTION {self.TABLE}() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE lease record;
            BEGIN
                SELECT l.owner, l.token, l.expires_at > now() AS live INTO lease
                  FROM mailboxes_mailboxlease l WHERE l.mailbox_id = NEW.mailbox_id;
                INSERT INTO {self.TABLE} (writer, tbl, mailbox_id, uid, owner, token, live)
                VALUES (current_setting('application_name'), TG_TABLE_NAME, NEW.mailbox_id,
                        (to_jsonb(NEW) ->> TG_ARGV[0])::bigint,
                        lease.owner, lease.token, lease.live);
                RETURN NEW;
            END $$;
            """
        )
        for table, column, events in self.AUDITED:
            self._execute(
                f"CREATE TRIGGER {self.TABLE} AFTER {events} ON {table}"
                f" FOR EACH ROW EXECUTE FUNCTION {self.TABLE}('{column}')"
            )
        return self

    def uninstall(self) -> None:
        for table, _column, _events in self.AUDITED:
            self._execute(f"DROP TRIGGER IF EXISTS {self.TABLE} ON {table}")
        self._execute(f"DROP FUNCTION IF EXISTS {self.TABLE}()")
        self._execute(f"DROP TABLE IF EXISTS {self.TABLE}")

    def now(self):
        return self._execute("SELECT clock_timestamp()")[0][0]

    def writes(self) -> list[tuple]:
        """(at, writer, table, mailbox_id, uid, lease owner, lease token, lease live)."""
        return self._execute(
            f"SELECT at, writer, tbl, mailbox_id, uid, owner, token, live"
            f" FROM {self.TABLE} ORDER BY id"
        )


def received(path: Path) -> list[mbox.MaildirMessage]:
    """The mails the SMTP sink (``smtp_server``) stored in ``path``."""
    if not path.exists():
        return []
    return list(mbox.Maildir(str(path), create=False))


@contextmanager
def hostile_rig(cases: Sequence[Case], log_dir: Path) -> Iterator[Rig]:
    """devkit.hostile's rig (Dovecot, listen_mail, qcluster) for ``cases``, on the test
    database with the fast settings, without a crash point inherited from outside."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PRICEFEED_CRASH")},
        **FAST_ENV,
        "DATABASE_URL": database_url(),
        "PYTHONUNBUFFERED": "1",
    }
    rig = Rig(cases, env=env, log_dir=log_dir)
    try:
        rig.start()
        yield rig
    finally:
        rig.close()
