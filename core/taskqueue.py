"""django-q2's database queue, with its workers woken at once instead of at their next poll.

django-q2's ORM broker looks for tasks, and when it finds none sleeps ``poll`` seconds
(``Q_CLUSTER["poll"]``) before it looks again: every hop of the pipeline (message →
import → outbox delivery → sending) waited for that poll, ~0.2 s each. ``WakingORM`` is
that broker with two changes:

- ``enqueue`` also sends ``NOTIFY`` on the queue's channel, in the enqueuer's transaction
  (so a task enqueued inside an atomic block wakes nobody before it is visible);
- ``dequeue``, finding nothing, waits on a ``LISTEN`` connection of its own for that
  notification, ``poll`` seconds at most, instead of sleeping.

Each of those is one statement (one round trip): the enqueue inserts the task and
sends the NOTIFY together; a dequeue takes the due tasks with one ``UPDATE … WHERE id IN
(SELECT … FOR UPDATE SKIP LOCKED) RETURNING``, where django-q2 reads them and then
updates each one's lock on its own condition; an acknowledgement is one DELETE, where
django-q2 wraps it in a transaction. A take and an acknowledgement commit without
waiting for the WAL flush (lost with a server crash, they are only repeated: core/sql.py,
ASYNC_COMMIT); an enqueue waits for it, as its caller's transaction does. A busy process
checks its connection (Django's health check, a ``SELECT 1``) at most every CHECK_EVERY
seconds and after an error, where django-q2 checks before every statement.

Nothing else changes: a task is taken only while its lock has expired, by one cluster
(of several woken together, one takes each task), a task not acknowledged in time comes
back after ``retry`` seconds, and the worker count still caps the concurrency. A
notification that is lost (the LISTEN connection down, or sent while this process was
busy) only means the task waits for the poll, as before: the notification is a hint,
the table is the truth.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, connections
from django.db.backends.utils import CursorWrapper
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf

from core import sql
from core.pgnotify import NotifyListener

CHANNEL_PREFIX = "pricefeed_tasks:"
# Seconds between two checks of a busy process's connection (see WakingORM._cursor).
CHECK_EVERY = 1.0
# PostgreSQL channel names are identifiers: at most 63 bytes.
CHANNEL_MAX_BYTES = 63


def channel(list_key: str) -> str:
    """The NOTIFY channel of one django-q2 queue (its ``list_key``, the cluster name)."""
    name = (CHANNEL_PREFIX + list_key).replace('"', "")
    return name.encode()[:CHANNEL_MAX_BYTES].decode(errors="ignore")


class WakingORM(ORM):
    """django-q2's ORM broker, woken by NOTIFY (see the module's text)."""

    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key=list_key)
        self._listener: NotifyListener | None = None
        self._listener_pid = 0
        self._never = threading.Event()
        self._next_check = 0.0

    def __setstate__(self, state: Any) -> None:
        # django-q2 hands brokers to its processes by fork, or by pickling (its own
        # __getstate__ keeps the queue's name): a LISTEN connection never crosses over.
        super().__setstate__(state)
        self._listener = None
        self._listener_pid = 0
        self._never = threading.Event()
        self._next_check = 0.0

    def _database(self) -> str:
        return str(Conf.ORM or "default")

    def _cursor(self) -> CursorWrapper:
        """A cursor on the queue's database. django-q2's broker closes stale connections
        (``close_old_connections``) before every statement, and with health checks on
        that costs a ``SELECT 1`` round trip each time, several per task; here a busy
        process checks at most every CHECK_EVERY seconds, and again after an error."""
        database = connections[self._database()]
        if database.get_autocommit() and time.monotonic() >= self._next_check:
            self.get_connection()  # django-q2's check
            self._next_check = time.monotonic() + CHECK_EVERY
        return database.cursor()

    def _execute(self, statement: str, params: Any) -> list[tuple[Any, ...]]:
        try:
            with self._cursor() as cursor:
                cursor.execute(statement, params)
                return cursor.fetchall() if cursor.description else []
        except DatabaseError:
            self._next_check = 0.0  # the next statement checks the connection first
            raise

    def enqueue(self, task: Any) -> Any:
        key = self.list_key or Conf.CLUSTER_NAME
        ((pk, _),) = self._execute(sql.TASK_ENQUEUE, [key, task, timezone.now(), channel(key)])
        return pk

    def _bookkeeping(self, statement: str) -> str:
        """A take or an acknowledgement committing without waiting for the flush, in
        autocommit only (core/sql.py, ASYNC_COMMIT)."""
        in_transaction = connections[self._database()].in_atomic_block
        return statement.format(async_commit="" if in_transaction else sql.ASYNC_COMMIT)

    def delete(self, task_id: Any) -> None:
        """Removes a task (its acknowledgement): one statement, no transaction around."""
        self._execute(self._bookkeeping(sql.TASK_DELETE), [task_id])
        return None

    def listener(self) -> NotifyListener:
        """This process's LISTEN connection (made on first use, again after a fork; the
        parent's is left alone: psycopg never closes a connection of another process)."""
        if self._listener is None or self._listener_pid != os.getpid():
            self._listener = NotifyListener(
                channel(self.list_key or Conf.CLUSTER_NAME), using=self._database()
            )
            self._listener_pid = os.getpid()
        return self._listener

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        # LISTEN before looking, so that a task enqueued between the look and the wait
        # ends the wait at once.
        listener = self.listener()
        tasks = self.take()
        if tasks:
            return tasks
        listener.wait(Conf.POLL, self._never)
        return None

    def take(self) -> list[tuple[Any, Any]]:
        """Takes up to ``bulk`` due tasks, oldest first, in one statement: the rows
        another cluster is taking are skipped, and a row is taken only while its lock
        has expired (re-checked on the row as locked)."""
        now = timezone.now()
        taken = self._execute(
            self._bookkeeping(sql.TASK_TAKE),
            {
                "key": self.list_key,
                "now": now,
                "bulk": Conf.BULK,
                "until": now + timedelta(seconds=Conf.RETRY),
            },
        )
        return sorted(taken)

    def close(self) -> None:
        if self._listener is not None and self._listener_pid == os.getpid():
            self._listener.close()
        self._listener = None
