"""django-q2's database queue, with its workers woken at once instead of at their next poll.

django-q2's ORM broker looks for tasks, and when it finds none sleeps ``poll`` seconds
(``Q_CLUSTER["poll"]``) before it looks again: every hop of the pipeline (message →
import → outbox delivery → sending) waited for that poll, ~0.2 s each. ``WakingORM`` is
that broker with two changes, on PostgreSQL only:

- ``enqueue`` also sends ``NOTIFY`` on the queue's channel, in the enqueuer's transaction
  (so a task enqueued inside an atomic block wakes nobody before it is visible);
- ``dequeue``, finding nothing, waits on a ``LISTEN`` connection of its own for that
  notification, ``poll`` seconds at most, instead of sleeping.

Nothing else changes: tasks are taken with django-q2's own conditional UPDATE of their
lock (so of several clusters woken together one takes each task), a task not
acknowledged in time comes back after ``retry`` seconds, and the worker count still caps
the concurrency. A notification that is lost (the LISTEN connection down, or sent while
this process was busy) only means the task waits for the poll, as before: the
notification is a hint, the table is the truth. On another database (SQLite) it is
django-q2's ORM broker unchanged.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.db import connections
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf

from core import sql
from core.db import postgresql
from core.pgnotify import NotifyListener

CHANNEL_PREFIX = "pricefeed_tasks:"
# PostgreSQL channel names are identifiers: at most 63 bytes.
CHANNEL_MAX_BYTES = 63


def channel(list_key: str) -> str:
    """The NOTIFY channel of one django-q2 queue (its ``list_key``, the cluster name)."""
    name = (CHANNEL_PREFIX + list_key).replace('"', "")
    return name.encode()[:CHANNEL_MAX_BYTES].decode(errors="ignore")


class WakingORM(ORM):
    """django-q2's ORM broker, woken by NOTIFY on PostgreSQL (see the module's text)."""

    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key=list_key)
        self._listener: NotifyListener | None = None
        self._listener_pid = 0
        self._never = threading.Event()

    def __setstate__(self, state: Any) -> None:
        # django-q2 hands brokers to its processes by fork, or by pickling (its own
        # __getstate__ keeps the queue's name): a LISTEN connection never crosses over.
        super().__setstate__(state)
        self._listener = None
        self._listener_pid = 0
        self._never = threading.Event()

    def _database(self) -> str:
        return str(Conf.ORM or "default")

    def _waking(self) -> bool:
        return postgresql(connections[self._database()])

    def enqueue(self, task: Any) -> Any:
        pk = super().enqueue(task)
        if self._waking():
            with connections[self._database()].cursor() as cursor:
                cursor.execute(sql.NOTIFY, [channel(self.list_key or Conf.CLUSTER_NAME), ""])
        return pk

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
        if not self._waking():
            return super().dequeue()  # takes what is due, or sleeps ``poll``
        # LISTEN before looking, so that a task enqueued between the look and the wait
        # ends the wait at once.
        listener = self.listener()
        tasks = self.take()
        if tasks:
            return tasks
        listener.wait(Conf.POLL, self._never)
        return None

    def take(self) -> list[tuple[Any, Any]]:
        """Takes up to ``bulk`` due tasks: django-q2's own query and conditional lock."""
        taken = []
        for task in self.get_connection().filter(key=self.list_key, lock__lt=timezone.now())[
            : Conf.BULK
        ]:
            if (
                self.get_connection()
                .filter(id=task.id, lock=task.lock)
                .update(lock=self.timeout(task))
            ):
                taken.append((task.pk, task.payload))
            # else another cluster took it first
        return taken

    def close(self) -> None:
        if self._listener is not None and self._listener_pid == os.getpid():
            self._listener.close()
        self._listener = None
