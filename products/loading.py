"""Loading our catalogue: a file's products (products.loaders) into Product, set-based.

The file's products are COPYed, as they are read, into a temporary table; one join of
it with our products keeps aside what the load changes (``DIFF``), and three statements
apply that, in the database, in one transaction:

- **changed**: a product of ours whose values differ from the file's (or that was
  retired and is listed again: active again) gets the file's values; those whose
  category or brand changed are announced (``products.changed``, in the same
  transaction): the price rules go by them, and pricing recomputes their prices;
- **added**: a code we do not have becomes a product;
- **retired**: on a full reload (not ``retire=False``, and not a CommerceML file of
  changes only), an active product the file does not list is retired (``retired_at``
  set), never deleted, linked or not; a code on a line the load refused is not
  retired (it is in the file, unreadable). Products a CommerceML file marks deleted
  are retired in any case.

Two loads take turns, and products are not changed by hand while one runs (the table is
locked SHARE ROW EXCLUSIVE: reads go on). A first load, into an empty catalogue, COPYs
straight into Product, its indexes on own_code dropped and built again after (the table
locked ACCESS EXCLUSIVE until the load commits: there is nothing to read yet).
``dry_run`` does all of it and rolls back: the counts are exactly what the load would do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils.translation import gettext as _

from pricefeed.imports.storage import COPY_ESCAPES

from .events import products_changed
from .indexes import indexes_dropped
from .loaders import CatalogueRefused, LoadLimits, Problem, Rows, read_catalogue
from .models import Product

TABLE = Product._meta.db_table
LOAD_WORK_MEM = "256MB"

COLUMNS = "own_code, name, brand, article, barcodes, unit, category"


@dataclass
class LoadResult:
    """What a load did (or, dry, would do)."""

    format: str
    full: bool
    read: int = 0
    added: int = 0
    changed: int = 0
    reactivated: int = 0
    retired: int = 0
    unchanged: int = 0
    refused: int = 0
    flagged: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False


def _copy_text(products: list[tuple]) -> str:
    """Products as COPY text lines. Made without escaping first; made again with every
    text escaped when a value held a backslash, tab or line break (rare: one count
    over the chunk tells). Barcodes are digits: an array literal needs no quoting."""
    text = "".join(
        [
            f"{code}\t{name}\t{brand}\t{article}\t{{{','.join(barcodes)}}}\t{unit}\t{category}\n"
            for code, name, brand, article, barcodes, unit, category in products
        ]
    )
    rows = len(products)
    if "\x00" in text:  # PostgreSQL's text holds no NUL
        text = text.replace("\x00", "")
        products = [
            tuple(v.replace("\x00", "") if isinstance(v, str) else v for v in p) for p in products
        ]
    if (
        text.count("\t") == 6 * rows
        and text.count("\n") == rows
        and "\\" not in text
        and "\r" not in text
    ):
        return text
    return "".join(
        [
            "\t".join(
                (
                    code.translate(COPY_ESCAPES),
                    name.translate(COPY_ESCAPES),
                    brand.translate(COPY_ESCAPES),
                    article.translate(COPY_ESCAPES),
                    "{" + ",".join(barcodes) + "}",
                    unit.translate(COPY_ESCAPES),
                    category.translate(COPY_ESCAPES),
                )
            )
            + "\n"
            for code, name, brand, article, barcodes, unit, category in products
        ]
    )


CREATE_LOAD_TABLE = """
CREATE TEMP TABLE product_load (
    own_code text NOT NULL, name text NOT NULL, brand text NOT NULL, article text NOT NULL,
    barcodes varchar(14)[] NOT NULL, unit text NOT NULL, category text NOT NULL
) ON COMMIT DROP
"""
COPY_LOAD = f"COPY product_load ({COLUMNS}) FROM STDIN"
# created_at and updated_at: their database default, now().
COPY_FIRST = f"COPY {TABLE} ({COLUMNS}) FROM STDIN"
# A first load builds the indexes on own_code (the unique one, Django's pattern one) once
# the products are in, not row by row as they come: building them over 1M products takes
# ~0.7 s of the server's time where keeping them up cost ~1.8 s (PostgreSQL 15, 2 cores).
# The primary key stays (the links' foreign keys need it). A unique constraint that a
# foreign key relies on would stay too.
# One pass over the file and our products (a hash join, FULL on a reload that retires,
# LEFT otherwise) keeps aside only what the load changes: the codes to add ('a'), the
# products whose values differ or that are retired and listed again ('c'), and, FULL,
# the active products the file does not list ('r'). The three statements that follow
# read that small table, not the file again (each anti-join of the file with our
# products cost as much as this whole pass).
DIFF = f"""
CREATE TEMP TABLE product_diff ON COMMIT DROP AS
SELECT CASE WHEN p.id IS NULL THEN 'a' WHEN l.own_code IS NULL THEN 'r' ELSE 'c' END AS kind,
       p.id, coalesce(l.own_code, p.own_code) AS own_code, p.retired_at IS NOT NULL AS was_retired,
       (p.category, p.brand) IS DISTINCT FROM (l.category, l.brand) AS repriced,
       l.name, l.brand, l.article, l.barcodes, l.unit, l.category
FROM product_load l {{join}} JOIN {TABLE} p ON p.own_code = l.own_code
WHERE p.id IS NULL
   OR (l.own_code IS NULL AND p.retired_at IS NULL)
   OR (l.own_code IS NOT NULL AND (
        p.retired_at IS NOT NULL
        OR (p.name, p.brand, p.article, p.barcodes, p.unit, p.category)
           IS DISTINCT FROM (l.name, l.brand, l.article, l.barcodes, l.unit, l.category)))
"""
COUNT_REACTIVATED = "SELECT count(*) FROM product_diff WHERE kind = 'c' AND was_retired"
# The products whose category or brand the load changes: the price rules go by them.
REPRICED = "SELECT id FROM product_diff WHERE kind = 'c' AND repriced"
UPDATE_CHANGED = f"""
UPDATE {TABLE} p
SET name = d.name, brand = d.brand, article = d.article, barcodes = d.barcodes,
    unit = d.unit, category = d.category, retired_at = NULL, updated_at = now()
FROM product_diff d WHERE d.kind = 'c' AND p.id = d.id
"""
INSERT_ADDED = f"""
INSERT INTO {TABLE} ({COLUMNS}, created_at, updated_at)
SELECT {COLUMNS}, now(), now() FROM product_diff WHERE kind = 'a'
"""
RETIRE_MISSING = f"""
UPDATE {TABLE} p SET retired_at = now(), updated_at = now()
FROM product_diff d
WHERE d.kind = 'r' AND p.id = d.id AND d.own_code <> ALL(%s::text[])
"""
RETIRE_DELETED = f"""
UPDATE {TABLE} p SET retired_at = now(), updated_at = now()
WHERE p.retired_at IS NULL AND p.own_code = ANY(%s::text[])
  AND NOT EXISTS (SELECT 1 FROM product_load l WHERE l.own_code = p.own_code)
"""


def products_load(
    path: str | os.PathLike,
    *,
    retire: bool = True,
    dry_run: bool = False,
    own_code: str = "id",
    limits: LoadLimits | None = None,
) -> LoadResult:
    """Loads our catalogue from the file at ``path`` (any format of products.loaders):
    adds, changes and (``retire``, on a full file) retires products; see the module
    docstring. CatalogueRefused when the file cannot be read, or holds no product at
    all on a full reload (which would retire every product)."""
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        # Two loads take turns (the lock conflicts with itself), and nobody changes a
        # product while one runs; the admin and the API still read.
        cursor.execute(f"LOCK TABLE {TABLE} IN SHARE ROW EXCLUSIVE MODE")
        # The joins of a million-product file with our catalogue hash in memory (the
        # default 4 MB spills them to disk in batches); for this transaction only.
        cursor.execute(f"SET LOCAL work_mem = '{LOAD_WORK_MEM}'")
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {TABLE})")
        first = not _one(cursor.fetchone())
        if first:
            rebuild = _drop_indexes(cursor)
        else:
            cursor.execute(CREATE_LOAD_TABLE)
        # A first load (no product yet: everything is added) goes straight into the
        # products table: the server stores one chunk while this process reads the
        # next (the codes are unique already: Rows refuses a repeated one).
        with cursor.cursor.copy(COPY_FIRST if first else COPY_LOAD) as copy:

            def send(products: list[tuple]) -> None:
                copy.write(_copy_text(products))

            rows = read_catalogue(path, limits=limits, own_code=own_code, sink=send)
            rows.flush()
        if first:
            for statement in rebuild:
                cursor.execute(statement)
            result = _result(rows)
            result.added = rows.count
        else:
            result = _apply(cursor, rows, retire=retire)
        result.dry_run = dry_run
        if dry_run:
            transaction.set_rollback(True)
    return result


def _drop_indexes(cursor) -> list[str]:
    """Drops the indexes of the (empty) products table but its primary key, in this
    transaction; returns the statements that build them again. Dropping takes the table
    ACCESS EXCLUSIVE until the load commits: with no product yet, nobody has anything
    to read in it."""
    cursor.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
    return indexes_dropped(cursor, TABLE, constraints="u")


def _one(row: tuple | None) -> object:
    assert row is not None
    return row[0]


def _result(rows: Rows) -> LoadResult:
    return LoadResult(
        format=rows.format,
        full=rows.full,
        read=rows.count,
        refused=rows.refused,
        flagged=rows.flagged,
        problems=rows.problems,
        notes=list(rows.notes),
    )


def _apply(cursor, rows: Rows, *, retire: bool) -> LoadResult:
    result = _result(rows)
    if not rows.count and rows.full and retire and not rows.deleted_codes:
        raise CatalogueRefused(
            _("the file holds no product that could be loaded: nothing is changed or retired")
        )
    retiring = rows.full and retire
    cursor.execute(DIFF.format(join="FULL" if retiring else "LEFT"))
    cursor.execute("ANALYZE product_diff")
    cursor.execute(COUNT_REACTIVATED)
    (result.reactivated,) = cursor.fetchone()
    cursor.execute(UPDATE_CHANGED)
    result.changed = cursor.rowcount
    cursor.execute(REPRICED)
    products_changed(product_id for (product_id,) in cursor.fetchall())
    cursor.execute(INSERT_ADDED)
    result.added = cursor.rowcount
    if retiring:
        cursor.execute(RETIRE_MISSING, [sorted(rows.kept_codes)])
        result.retired = cursor.rowcount
    elif not rows.full:
        result.notes.append(_("the file holds changes only: products it does not list are kept"))
    if rows.deleted_codes:
        cursor.execute(RETIRE_DELETED, [rows.deleted_codes])
        result.retired += cursor.rowcount
    result.unchanged = rows.count - result.added - result.changed
    return result


def copy_lines(products: list[tuple]) -> str:
    """The COPY text of ``products`` (for the benchmark's yardstick)."""
    return _copy_text(products)
