"""Which database this is, decided in one place.

On PostgreSQL pricefeed uses the server's own features: COPY, claims with ``FOR UPDATE
SKIP LOCKED`` in one statement, LISTEN/NOTIFY, lock and idle timeouts, binary reads of
large values. Anywhere else (SQLite, the embedded single-instance setup) the ORM does the
same work plainly, and waiting loops poll instead of being notified.
"""

from __future__ import annotations

from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper


def postgresql(connection: BaseDatabaseWrapper | None = None) -> bool:
    """True when ``connection`` (default: the default database) is PostgreSQL."""
    return (connection or default_connection).vendor == "postgresql"
