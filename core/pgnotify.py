"""PostgreSQL LISTEN/NOTIFY: wake a sleeping loop at once instead of at its next poll.

The callers poll anyway: a notification only makes them quicker, and while the LISTEN
connection is down ``NotifyListener.wait`` just sleeps.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from core import sql
from core.logs import first_line

logger = logging.getLogger(__name__)


def notify_on_commit(channel: str, payload: str = "") -> None:
    """Sends NOTIFY when the current transaction commits (at once in autocommit)."""

    def send() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql.NOTIFY, [channel, payload])

    transaction.on_commit(send)


class NotifyListener:
    """A connection of its own, LISTENing on some channels."""

    # After a failure, connecting again is tried at most this often (seconds).
    RETRY = 5.0

    def __init__(self, *channels: str, using: str = DEFAULT_DB_ALIAS) -> None:
        self.channels = channels
        self.database = connections[using]
        self.conn: psycopg.Connection | None = None
        self._next_try = 0.0
        self._failing = False
        self._connect()

    def _connect(self) -> None:
        if self.conn is not None or time.monotonic() < self._next_try:
            return
        params = self.database.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        try:
            conn = psycopg.connect(**params, autocommit=True)
            for channel in self.channels:
                conn.execute(sql.LISTEN.format(channel=channel))
        except psycopg.Error as exc:
            # The caller polls anyway; say so once, not at every retry.
            if not self._failing:
                logger.warning("cannot LISTEN (%s); polling until it works", first_line(exc))
            self._failing = True
            self._next_try = time.monotonic() + self.RETRY
            return
        if self._failing:
            logger.info("LISTEN connection back")
        self._failing = False
        self.conn = conn

    def wait(self, timeout: float, stop: threading.Event) -> bool:
        """Waits for a notification, ``timeout`` or ``stop``; True when notified.

        A burst of notifications wakes the caller once per wait, not once each. Waits in
        slices of at most a second so ``stop`` is noticed promptly.
        """
        self._connect()
        if self.conn is None:
            stop.wait(max(0.0, timeout))
            return False
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                for _ in self.conn.notifies(timeout=min(left, 1.0), stop_after=1):
                    return True
            except psycopg.Error as exc:
                logger.warning(
                    "LISTEN connection lost (%s); polling until it is back", first_line(exc)
                )
                self._failing = True
                self._next_try = time.monotonic() + self.RETRY
                self.close()
                stop.wait(max(0.0, deadline - time.monotonic()))
                return False
        return False

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None
