"""A running import's progress: the rows read so far, in ``PriceImport.rows_read``.

The import stores its rows and its outcome in one transaction (lifecycle
._parse_and_store), and rows stream into COPY while the file is read. An UPDATE of
``rows_read`` inside that transaction would show nobody anything until it commits, when
the import is over. So the count goes out on a database connection of its own, in
autocommit: each write is its own short transaction, seen at once by the admin and
everyone else, while the import's transaction stays open.

That connection is opened only once an import has run for one interval
(``PRICEFEED_IMPORT_PROGRESS_INTERVAL``): most imports end before, and cost nothing
extra. It writes at most once an interval, and the clock is read once per batch of
rows the parser hands over (thousands of rows), never per row. The write is a
conditional UPDATE on the claim (RUNNING, claimed by this worker), so it never touches
an import that was taken away or finished; it takes no lock the import's transaction
holds (that transaction writes the import's row only when it finishes, after the last
progress write), and a lock timeout bounds it anyway. A failed progress write is logged
and ends the progress writes of that import, never the import.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field

from pricefeed.models import PriceImport

logger = logging.getLogger(__name__)

# How long a progress write may wait for a lock (milliseconds): it should never wait,
# and an import must not hang on its own progress.
LOCK_TIMEOUT_MS = 2000

# The clock of import_progress, looked up at every call, so that a test can move it.
_now = time.monotonic


class Progress:
    """Counts the rows read and hands the count to ``write`` at most once every
    ``interval`` seconds of ``clock``: the first time one interval after it was made.
    ``interval`` 0 or less: never (the count is kept for the end)."""

    def __init__(
        self,
        write: Callable[[int], None],
        *,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rows = 0
        self._write = write
        self._interval = interval
        self._clock = clock
        self._due = clock() + interval if interval > 0 else float("inf")

    def read(self, rows: int) -> None:
        """``rows`` more rows were read: called once per batch of rows, not per row."""
        self.rows += rows
        if self._due == float("inf"):
            return
        now = self._clock()
        if now >= self._due:
            self._write(self.rows)
            self._due = now + self._interval


class ProgressWriter:
    """Writes an import's ``rows_read`` on a connection of its own (see the module
    docstring); opened at the first write, closed by ``close``."""

    def __init__(self, *, import_id: int, worker: str) -> None:
        self.import_id = import_id
        self.worker = worker
        self.writes = 0
        self._connection: BaseDatabaseWrapper | None = None
        self._broken = False

    def __call__(self, rows: int) -> None:
        if self._broken:
            return
        try:
            if self._connection is None:
                # A copy of the import's own connection's settings: the same database
                # (the test database under tests), a connection of its own, autocommit.
                self._connection = connection.copy()
                with self._connection.cursor() as cursor:
                    cursor.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
            with self._connection.cursor() as cursor:
                cursor.execute(
                    _update_sql(self._connection),
                    [rows, self.import_id, PriceImport.Status.RUNNING, self.worker],
                )
            self.writes += 1
        except DatabaseError:
            self._broken = True
            logger.warning(
                "import progress not written import_id=%s; no more progress for this run",
                self.import_id,
                exc_info=True,
                extra={"action": "import_progress_failed", "import_id": self.import_id},
            )

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except DatabaseError:
                logger.warning(
                    "closing the progress connection failed import_id=%s",
                    self.import_id,
                    exc_info=True,
                    extra={"import_id": self.import_id},
                )
            self._connection = None


def _update_sql(db: BaseDatabaseWrapper) -> str:
    """UPDATE … SET rows_read = %s WHERE pk = %s AND status = %s AND claimed_by = %s."""
    meta = PriceImport._meta
    quote = db.ops.quote_name

    def column(name: str) -> str:
        field = meta.get_field(name)
        assert isinstance(field, Field) and field.column
        return quote(field.column)

    return (
        f"UPDATE {quote(meta.db_table)} SET {column('rows_read')} = %s "
        f"WHERE {column('id')} = %s AND {column('status')} = %s "
        f"AND {column('claimed_by')} = %s"
    )


def _write_nothing(rows: int) -> None:
    pass


class import_progress:
    """``with import_progress(import_id=…, worker=…) as progress:`` a Progress whose
    writes go to the import's row while it runs (nowhere with
    PRICEFEED_IMPORT_PROGRESS_INTERVAL 0); its connection closed on the way out."""

    def __init__(self, *, import_id: int, worker: str) -> None:
        interval = float(settings.PRICEFEED_IMPORT_PROGRESS_INTERVAL)
        self.writer = ProgressWriter(import_id=import_id, worker=worker) if interval > 0 else None
        self.progress = Progress(
            self.writer or _write_nothing, interval=interval, clock=lambda: _now()
        )

    def __enter__(self) -> Progress:
        return self.progress

    def __exit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.close()
