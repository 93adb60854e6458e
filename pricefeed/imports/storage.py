"""Storing an import's rows: COPY text made a chunk (or a column) at a time, fed to
PostgreSQL from a thread while the parser reads on; plain inserts elsewhere."""

from __future__ import annotations

import contextlib
import hashlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice, repeat
from operator import itemgetter, lt

from django.db import connection

from core.copyfeed import CopyFeeder
from core.db import postgresql
from pricefeed import parsing, sql
from pricefeed.models import PriceItem, item_key

_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_CHUNK = 20_000


def _copy_text(import_id: int, rows: list[tuple]) -> str:
    """Rows as COPY text-format lines: formatting lines here is ~5x faster than letting
    the driver adapt every value of every row.

    One f-string per row without escaping first; the chunk is used as is when it holds
    exactly 6 tabs and 1 newline per row and no backslash or carriage return (no text
    field held one: nearly always), else it is made again with every text escaped.
    Prices are never None; a None quantity prints as "None" at the end of its line and
    becomes \\N. ``!s`` calls str() directly: half the time of Decimal.__format__.
    """
    key = item_key(import_id, 0)
    if rows:
        item_key(import_id, rows[-1][0])  # rows come in file order: the last is in range
    prefix = f"\t{import_id}\t"
    text = "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku}\t{name}\t{price!s}\t{currency}\t"
            f"{quantity!s}\n"
            for row_number, sku, name, price, currency, quantity in rows
        ]
    )
    if _copy_safe(text, len(rows)):
        return text.replace("\tNone\n", "\t\\N\n")
    null = "\\N"
    return "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku.translate(_COPY_ESCAPES)}\t"
            f"{name.translate(_COPY_ESCAPES)}\t{null if price is None else price}\t"
            f"{currency.translate(_COPY_ESCAPES)}\t{null if quantity is None else quantity}\n"
            for row_number, sku, name, price, currency, quantity in rows
        ]
    )


def _copy_safe(text: str, rows: int) -> bool:
    """Whether unescaped COPY lines are exactly ``rows`` lines of 8 fields: no text field
    held a tab, newline, carriage return or backslash."""
    return (
        text.count("\t") == 7 * rows
        and text.count("\n") == rows
        and "\\" not in text
        and "\r" not in text
    )


def _block_copy_text(import_id: int, block: parsing.RowBlock) -> str:
    """A RowBlock as COPY text-format lines, joined a column at a time (a third of the
    time of formatting row tuples). Checked as in _copy_text: made again with every
    text escaped when some text holds a tab, newline, carriage return or backslash."""
    text = _block_lines(import_id, block, escape=False)
    if _copy_safe(text, len(block)):
        return text
    return _block_lines(import_id, block, escape=True)


def _block_lines(import_id: int, block: parsing.RowBlock, *, escape: bool) -> str:
    def texts(value: Sequence[str] | str) -> Iterable[str]:
        if isinstance(value, str):
            return repeat(value.translate(_COPY_ESCAPES) if escape else value)
        return [v.translate(_COPY_ESCAPES) for v in value] if escape else value

    quantities = block.quantities
    first = block.first_row
    key = item_key(import_id, first)
    item_key(import_id, first + len(block) - 1)  # in range
    columns = (
        map(str, range(key, key + len(block))),
        repeat(str(import_id)),
        map(str, range(first, first + len(block))),
        texts(block.skus),
        texts(block.names),
        block.prices,  # decimal text: nothing to escape
        texts(block.currencies),
        (
            repeat(_NULL)
            if quantities is None
            # dict.get(q, q): the quantity, or \N for none, at C speed.
            else map(_NULL_TEXT.get, quantities, quantities)
        ),
    )
    # The lists end the lines; repeat() stands in for a value every row shares.
    return "\n".join(map("\t".join, zip(*columns, strict=False))) + "\n"


_SKU = itemgetter(1)
_NAME = itemgetter(2)
_PRICE = itemgetter(3)
_CURRENCY = itemgetter(4)
_QUANTITY = itemgetter(5)
_NULL = "\\N"
_NULL_TEXT: dict[str | None, str] = {None: _NULL}


class ItemWriter:
    """A sink for parse(): stores row tuples through ``write_rows`` and RowBlocks through
    ``write_block``, and notes what the diff needs to know about them.

    ``repeated_skus``: while SKUs come in strictly ascending order (a cheap comparison
    of neighbours) none can repeat. Once one is out of order, the hashes of all SKUs
    (kept from the start, 8 bytes each: the SKUs themselves took ~100 MB per million
    rows) are counted at the end; fewer distinct hashes than rows reads as a repeated
    SKU. The diff then reads each import's last row per SKU instead of its rows as they
    are, which is right whether or not one repeats: a hash collision only costs a sort.

    ``digest``: a SHA-256 of the SKU and price sequence as stored. Two imports with the
    same digest hold the same SKUs with the same prices in the same order, so the diff
    between them is empty without reading a row. ``catalogue_digest`` covers every
    field (names, currencies and quantities too): the same list again leaves the
    catalogue as it is, without reading a row (pricefeed.catalogue).

    ``progress`` is told how many rows each list or block held, once per list or block
    (thousands of rows: progress.Progress reads its clock there, not per row).
    """

    def __init__(
        self,
        write_rows: Callable[[list[tuple]], None],
        write_block: Callable[[parsing.RowBlock], None],
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self._write_rows = write_rows
        self._write_block = write_block
        self._progress = progress
        self.rows = 0
        self._ascending = True
        self._last_sku: str | None = None
        self._hashes = array("q")
        self._sku_hash = hashlib.sha256()
        self._price_hash = hashlib.sha256()
        self._rest_hash = hashlib.sha256()

    def __call__(self, rows: list[tuple]) -> None:
        if rows:
            self._note(list(map(_SKU, rows)), list(map(str, map(_PRICE, rows))))
            quantities = [("" if q is None else str(q)) for q in map(_QUANTITY, rows)]
            self._note_rest(list(map(_NAME, rows)), list(map(_CURRENCY, rows)), quantities)
        self._write_rows(rows)
        if rows and self._progress is not None:
            self._progress(len(rows))

    def take_block(self, block: parsing.RowBlock) -> None:
        self._note(block.skus, block.prices)
        quantities = (
            [""] * len(block) if block.quantities is None else [q or "" for q in block.quantities]
        )
        self._note_rest(block.names, block.currencies, quantities, rows=len(block))
        self._write_block(block)
        if self._progress is not None:
            self._progress(len(block))

    def _note(self, skus: Sequence[str], prices: Sequence[str]) -> None:
        self.rows += len(skus)
        # Escaped, a SKU holds no newline: the joined text splits back into the same
        # SKUs, and the digest of one sequence is never that of another.
        sku_text = "\n".join(skus) + "\n"
        if "\\" in sku_text or "\r" in sku_text or sku_text.count("\n") != len(skus):
            sku_text = "\n".join(sku.translate(_COPY_ESCAPES) for sku in skus) + "\n"
        self._sku_hash.update(sku_text.encode())
        self._price_hash.update(("\n".join(prices) + "\n").encode())
        self._hashes.extend(map(hash, skus))
        if self._ascending:
            last = self._last_sku
            if (last is None or last < skus[0]) and all(map(lt, skus, islice(skus, 1, None))):
                self._last_sku = skus[-1]
            else:
                self._ascending = False

    def _note_rest(
        self,
        names: Sequence[str] | str,
        currencies: Sequence[str] | str,
        quantities: Sequence[str],
        rows: int = 0,
    ) -> None:
        """Names, currencies and quantities, for catalogue_digest: NUL-separated (a
        stored text holds no NUL, so the joined text reads back one way only); a value
        every row shares, once with the count."""
        for values in (names, currencies, quantities):
            text = f"{rows}*{values}" if isinstance(values, str) else "\0".join(values)
            self._rest_hash.update(text.encode() + b"\0\1")

    @property
    def catalogue_digest(self) -> str:
        return hashlib.sha256(
            self._sku_hash.digest() + self._price_hash.digest() + self._rest_hash.digest()
        ).hexdigest()

    @property
    def repeated_skus(self) -> bool:
        return not self._ascending and len(set(self._hashes)) != len(self._hashes)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self._sku_hash.digest() + self._price_hash.digest()).hexdigest()


@contextlib.contextmanager
def item_writer(
    import_id: int, progress: Callable[[int], None] | None = None
) -> Iterator[ItemWriter]:
    """A sink for parse(): on PostgreSQL each list of rows goes into one open COPY as it
    comes, through a CopyFeeder (the server stores it while Python reads on); elsewhere
    rows are collected and inserted in batches when the block ends. Inside the caller's
    transaction, which a failed COPY leaves to be rolled back (the connection stays
    usable); the driver's errors come out as Django's (django.db.DataError, ...).
    ``progress`` is told the rows of each list or block handed over (ItemWriter)."""
    if not postgresql():
        collected: list[tuple] = []
        yield ItemWriter(collected.extend, lambda block: collected.extend(block.rows()), progress)
        insert_items(import_id, collected)
        return
    # The COPY runs on the driver's cursor: its errors are made Django's here (a value
    # the server refuses is a django.db.DataError, a permanent error for the import).
    with connection.wrap_database_errors, connection.cursor() as cursor:
        with cursor.cursor.copy(sql.COPY_ITEMS) as copy:
            # The server stores one chunk while the parser reads the next.
            feeder = CopyFeeder(copy.write)

            def write_rows(rows: list[tuple]) -> None:
                for start in range(0, len(rows), _COPY_CHUNK):
                    feeder.write(_copy_text(import_id, rows[start : start + _COPY_CHUNK]))

            def write_block(block: parsing.RowBlock) -> None:
                feeder.write(_block_copy_text(import_id, block))

            try:
                yield ItemWriter(write_rows, write_block, progress)
            except BaseException:
                feeder.abandon()
                raise
            feeder.close()


def insert_items(import_id: int, rows: list[tuple]) -> None:
    """Stores rows with COPY on PostgreSQL, in batches elsewhere."""
    if postgresql():
        with connection.wrap_database_errors, connection.cursor() as cursor:
            with cursor.cursor.copy(sql.COPY_ITEMS) as copy:
                for start in range(0, len(rows), _COPY_CHUNK):
                    copy.write(_copy_text(import_id, rows[start : start + _COPY_CHUNK]))
        return
    PriceItem.objects.bulk_create(
        (
            PriceItem(
                id=item_key(import_id, row_number),
                price_import_id=import_id,
                row_number=row_number,
                sku=sku,
                name=name,
                price=price,
                currency=currency,
                quantity=quantity,
            )
            for row_number, sku, name, price, currency, quantity in rows
        ),
        batch_size=2000,
    )
