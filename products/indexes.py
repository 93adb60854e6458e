"""Dropping a table's indexes for a bulk write and making them again after: building an
index once is several times faster than updating it row by row (a first load of our
catalogue, the first refresh of a million products' match tokens)."""

from __future__ import annotations

from django.db import connection

INDEX_WORK_MEM = "256MB"

# The table's constraints of the kinds asked for ('p' primary key, 'u' unique) that no
# foreign key depends on, and its indexes that back no constraint.
_CONSTRAINTS = """
SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c
WHERE c.conrelid = %s::regclass AND c.contype = ANY(%s)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = c.conindid)
ORDER BY c.conname
"""
_INDEXES = """
SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i
WHERE i.indrelid = %s::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY 1
"""


def indexes_dropped(cursor, table: str, *, constraints: str) -> list[str]:
    """Drops ``table``'s constraints of the kinds in ``constraints`` ("p", "u", "pu")
    and its other indexes, in the caller's transaction; returns the statements that
    make them again (with more memory to sort in, for that transaction)."""
    quote = connection.ops.quote_name
    cursor.execute(_CONSTRAINTS, [table, list(constraints)])
    kept = cursor.fetchall()
    cursor.execute(_INDEXES, [table])
    indexes = cursor.fetchall()
    remake = [f"SET LOCAL maintenance_work_mem = '{INDEX_WORK_MEM}'"]
    for name, definition in kept:
        cursor.execute(f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}")
        remake.append(f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(name)} {definition}")
    for name, definition in indexes:
        cursor.execute(f"DROP INDEX {name}")
        remake.append(definition)
    return remake if len(remake) > 1 else []
