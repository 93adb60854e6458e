"""CopyFeeder: hands COPY data to the database from a thread of its own.

psycopg's ``Copy.write`` waits whenever the socket's buffer is full, that is whenever
the server is still busy with the previous chunk; the parser then waits too, and the
two cores of a worker machine take turns instead of working side by side. A feeder
thread does the waiting: ``write`` only queues the text (and returns at once unless
``max_pending`` characters are already queued), so the parser reads the next chunk
while PostgreSQL stores this one. For a 100k-row workbook this took the import from
2.8 s to 2.0 s (bench/parse.py).

The feeder calls ``write`` in its thread only, in the order the chunks were queued.
The first error it meets is raised in the caller's thread by every later ``write`` and
by ``close``; the chunks queued after it are dropped (the COPY is failing anyway).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

MAX_PENDING = 8 << 20  # characters queued and not yet written (~ bytes of COPY text)


class CopyFeeder:
    def __init__(self, write: Callable[[str], None], *, max_pending: int = MAX_PENDING) -> None:
        self._write = write
        self._max_pending = max_pending
        self._chunks: deque[str | None] = deque()
        self._pending = 0
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="copy-feeder", daemon=True)
        self._thread.start()

    def write(self, chunk: str) -> None:
        """Queues ``chunk``; waits while ``max_pending`` characters are queued (a chunk
        larger than that is queued alone)."""
        with self._changed:
            while self._pending and self._pending + len(chunk) > self._max_pending:
                if self._error is not None:
                    break
                self._changed.wait()
            self._raise_error()
            self._chunks.append(chunk)
            self._pending += len(chunk)
            self._changed.notify_all()

    def close(self) -> None:
        """Waits until every queued chunk is written; raises the feeder's error, if any.
        Safe to call more than once."""
        if self._thread.is_alive():
            with self._changed:
                self._chunks.append(None)
                self._changed.notify_all()
            self._thread.join()
        with self._changed:
            self._raise_error()

    def abandon(self) -> None:
        """Stops the feeder without writing what is still queued, and without raising:
        for when the COPY is being given up because of another error."""
        with self._changed:
            self._chunks.clear()
            self._pending = 0
            self._chunks.append(None)
            self._changed.notify_all()
        self._thread.join()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._chunks:
                    self._changed.wait()
                chunk = self._chunks.popleft()
            if chunk is None:
                return
            try:
                self._write(chunk)
            except BaseException as exc:  # handed to the caller's thread
                with self._changed:
                    self._error = exc
                    self._chunks.clear()
                    self._pending = 0
                    self._changed.notify_all()
                return
            with self._changed:
                self._pending -= len(chunk)
                self._changed.notify_all()
