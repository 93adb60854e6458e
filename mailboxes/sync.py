"""Small synchronisation pieces of the listener threads."""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connection


class Waker:
    """A pipe that interrupts an IDLE wait or a backoff sleep at once."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        # wake() may come from another thread after close(): writing to a closed fd
        # number that the process has since reused would corrupt someone else's file.
        self._lock = threading.Lock()
        self._closed = False

    def wake(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                os.write(self.write_fd, b"!")
            except (BlockingIOError, OSError):
                pass

    def pending(self) -> bool:
        """True when a wake-up is waiting to be drained."""
        with self._lock:
            if self._closed:
                return False
            readable, _, _ = select.select([self.read_fd], [], [], 0)
            return bool(readable)

    def drain(self) -> None:
        try:
            while os.read(self.read_fd, 512):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fd in (self.read_fd, self.write_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass


class DatabaseSlots:
    """Bounds how many listener threads use the database at once. With more listeners
    than slots each closes its connection when done, so a hundred idle mailboxes hold no
    server connections and a hundred catching up at once hold at most ``size``; with
    fewer, connections stay open (a reconnect costs milliseconds of latency)."""

    def __init__(self, size: int, listeners: Callable[[], int] = lambda: 1) -> None:
        self.size = max(1, size)
        self._semaphore = threading.BoundedSemaphore(self.size)
        self._listeners = listeners

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._semaphore:
            try:
                yield
            finally:
                if self._listeners() > self.size:
                    connection.close()
