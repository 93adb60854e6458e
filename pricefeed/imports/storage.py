"""Storing an import's rows: COPY text made a chunk (or a column) at a time, written to
PostgreSQL while the parser reads on; plain inserts elsewhere."""

from __future__ import annotations

import contextlib
import hashlib
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import islice, repeat
from operator import itemgetter, lt
from typing import Any

from django.db import connection

from pricefeed import parsing, sql
from pricefeed.models import item_key

# What PostgreSQL's COPY text format escapes in a value (products COPYs with it too).
COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_CHUNK = 20_000


class Ends:
    """The last two fields of every COPY line of an import's items, config_id and
    valid_from, with the newline: ``stored`` for an item that is not (yet) current,
    ``current`` for one made current as it is stored (the first list of a config whose
    catalogue is empty; ``moment`` is then the time it became current)."""

    def __init__(self, config_id: int, moment: datetime | None = None) -> None:
        self.stored = f"\t{config_id}\t{_NULL}\n"
        self.current = f"\t{config_id}\t{moment.isoformat(sep=' ')}\n" if moment else self.stored


def _copy_text(
    import_id: int, rows: list[tuple], ends: Sequence[str] | str, *, rich: bool = False
) -> str:
    """Rows as COPY text-format lines: formatting lines here is ~5x faster than letting
    the driver adapt every value of every row. ``ends``: each line's end (Ends), or one
    for all.

    One f-string per row without escaping first; the chunk is used as is when it holds
    exactly 9 tabs and 1 newline per row, no carriage return and no backslash but those
    of the line ends' \\N (no text field held one: nearly always), else it is made
    again with every text escaped.
    Prices are never None; a None quantity prints as "None" before its line's end and
    becomes \\N. ``!s`` calls str() directly: half the time of Decimal.__format__.
    ``rich``: each line's end starts with its extra values (extra_tails): a None
    quantity is made \\N as the line is formatted, not replaced before each end.
    """
    key = item_key(import_id, 0)
    if rows:
        item_key(import_id, rows[-1][0])  # rows come in file order: the last is in range
    prefix = f"\t{import_id}\t"
    each = repeat(ends) if isinstance(ends, str) else ends
    if rich:
        return _rich_copy_text(import_id, rows, ends)
    text = "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku}\t{name}\t{price!s}\t{currency}\t"
            f"{quantity!s}{end}"
            for (row_number, sku, name, price, currency, quantity), end in zip(
                rows, each, strict=False
            )
        ]
    )
    if _copy_safe(text, len(rows), _backslashes(ends, len(rows)), _tabs(ends, len(rows))):
        for end in {ends} if isinstance(ends, str) else set(ends):
            text = text.replace(f"\tNone{end}", f"\t{_NULL}{end}")
        return text
    return _escaped_copy_text(import_id, rows, ends)


def _rich_copy_text(import_id: int, rows: list[tuple], ends: Sequence[str] | str) -> str:
    """_copy_text's lines when their ends differ from row to row (extra values)."""
    key = item_key(import_id, 0)
    prefix = f"\t{import_id}\t"
    null = _NULL
    each = repeat(ends) if isinstance(ends, str) else ends
    text = "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku}\t{name}\t{price!s}\t{currency}\t"
            f"{null if quantity is None else quantity}{end}"
            for (row_number, sku, name, price, currency, quantity), end in zip(
                rows, each, strict=False
            )
        ]
    )
    nulls = sum(1 for row in rows if row[5] is None)
    backslashes = _backslashes(ends, len(rows)) + nulls * null.count("\\")
    if _copy_safe(text, len(rows), backslashes, _tabs(ends, len(rows))):
        return text
    return _escaped_copy_text(import_id, rows, ends)


def _escaped_copy_text(import_id: int, rows: list[tuple], ends: Sequence[str] | str) -> str:
    key = item_key(import_id, 0)
    prefix = f"\t{import_id}\t"
    null = _NULL
    each = repeat(ends) if isinstance(ends, str) else ends
    return "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku.translate(COPY_ESCAPES)}\t"
            f"{name.translate(COPY_ESCAPES)}\t{null if price is None else price}\t"
            f"{currency.translate(COPY_ESCAPES)}\t{null if quantity is None else quantity}"
            f"{end}"
            for (row_number, sku, name, price, currency, quantity), end in zip(
                rows, each, strict=False
            )
        ]
    )


def _copy_safe(text: str, rows: int, backslashes: int, tabs: int) -> bool:
    """Whether unescaped COPY lines are exactly ``rows`` lines of 8 fields and their
    ends: no text field held a tab, newline, carriage return or backslash
    (``backslashes``: those of the \\N the lines were given for their empty values and
    of their ends; ``tabs``: those of their ends)."""
    return (
        text.count("\t") == 7 * rows + tabs
        and text.count("\n") == rows
        and text.count("\\") == backslashes
        and "\r" not in text
    )


def _backslashes(ends: Sequence[str] | str, rows: int) -> int:
    """The backslashes of the lines' ends (Ends.stored's \\N, extra values')."""
    if isinstance(ends, str):
        return ends.count("\\") * rows
    return sum(map(str.count, ends, repeat("\\")))


def _tabs(ends: Sequence[str] | str, rows: int) -> int:
    """The tabs of the lines' ends."""
    if isinstance(ends, str):
        return ends.count("\t") * rows
    return sum(map(str.count, ends, repeat("\t")))


def _block_copy_text(
    import_id: int,
    block: parsing.RowBlock,
    ends: Sequence[str] | str,
    fields: Sequence[str] | None = None,
) -> str:
    """A RowBlock as COPY text-format lines, joined a column at a time (a third of the
    time of formatting row tuples). Checked as in _copy_text: made again with every
    text escaped when some text holds a tab, newline, carriage return or backslash.
    ``fields``: each line's extra values (extra_fields, COPY text already), a column
    of its own before the line's end."""
    text = _block_lines(import_id, block, ends, fields, escape=False)
    quantities = block.quantities
    nulls = len(block) if quantities is None else quantities.count(None)
    backslashes = _backslashes(ends, len(block)) + nulls
    tabs = _tabs(ends, len(block))
    if fields is not None:
        joined = "\0".join(fields)
        backslashes += joined.count("\\")
        tabs += joined.count("\t") + len(block)
    if _copy_safe(text, len(block), backslashes, tabs):
        return text
    return _block_lines(import_id, block, ends, fields, escape=True)


def _block_lines(
    import_id: int,
    block: parsing.RowBlock,
    ends: Sequence[str] | str,
    fields: Sequence[str] | None,
    *,
    escape: bool,
) -> str:
    def texts(value: Sequence[str] | str) -> Iterable[str]:
        if isinstance(value, str):
            return repeat(value.translate(COPY_ESCAPES) if escape else value)
        return [v.translate(COPY_ESCAPES) for v in value] if escape else value

    quantities = block.quantities
    first = block.first_row
    key = item_key(import_id, first)
    item_key(import_id, first + len(block) - 1)  # in range
    columns: tuple[Iterable[Any], ...] = (
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
    if fields is not None:
        columns += (fields,)
    # The lists end the lines; repeat() stands in for a value every row shares.
    lines = map("\t".join, zip(*columns, strict=False))
    if isinstance(ends, str):  # each line's end holds its newline
        return ends.join(lines) + ends
    return "".join(map(str.__add__, lines, ends))


# -- extra values (parsing.ExtraColumns) ------------------------------------------------

# Each extra column's COPY text when a line has no such value (the columns' defaults).
_EXTRA_EMPTY = {
    "brand": "",
    "article": "",
    "barcodes": "{}",
    "barcodes_invalid": "{}",
    "unit": "",
    "pack": "\\N",
    "min_order": "\\N",
    "category": "",
    "stock_text": "",
    "stock_kind": "",
    "prices": "{}",
    "stocks": "{}",
}
assert tuple(_EXTRA_EMPTY) == parsing.EXTRA_VALUES
# The extra values of a line that has none, as the start of its COPY line's end.
EMPTY_TAIL = "".join(f"\t{v}" for v in _EXTRA_EMPTY.values())
_ARRAY_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"'})


def _copy_texts(values: list) -> list[str]:
    """Texts COPY-escaped; a column with nothing to escape (nearly every one) as it is,
    found by one look at the joined column."""
    joined = "\0".join(values)
    if "\\" in joined or "\t" in joined or "\n" in joined or "\r" in joined:
        return [v.translate(COPY_ESCAPES) for v in values]
    return values


def _copy_numbers(values: list) -> list[str]:
    return [_NULL if v is None else str(v) for v in values]


def _copy_arrays(values: list) -> list[str]:
    """Lists of str as PostgreSQL array literals, each element quoted, COPY-escaped."""
    return [
        "{" + ",".join(f'"{v.translate(_ARRAY_ESCAPES)}"' for v in codes) + "}" if codes else "{}"
        for codes in values
    ]


def _copy_json(values: list) -> list[str]:
    return _copy_texts(
        [json.dumps(v, ensure_ascii=False, separators=(",", ":")) if v else "{}" for v in values]
    )


_EXTRA_FORMAT: dict[str, Callable[[list], list[str]]] = {
    "brand": _copy_texts,
    "article": _copy_texts,
    "barcodes": _copy_arrays,
    "barcodes_invalid": lambda values: _copy_texts(_copy_arrays(values)),
    "unit": _copy_texts,
    "pack": _copy_numbers,
    "min_order": _copy_numbers,
    "category": _copy_texts,
    "stock_text": _copy_texts,
    "stock_kind": _copy_texts,
    "prices": _copy_json,
    "stocks": _copy_json,
}


def extra_fields(extras: parsing.ExtraColumns) -> list[str]:
    """Each row's extra values as COPY text fields (tab-separated, no tab before the
    first), a column at a time: the columns the chunk lacks are one constant text
    between the values it has, so a line costs one formatting call, not a join of
    twelve fields."""
    values = extras.values
    parts: list[str] = []
    columns = []
    for name, empty in _EXTRA_EMPTY.items():
        if name in values:
            parts.append("%s")
            columns.append(_EXTRA_FORMAT[name](values[name]))
        else:
            parts.append(empty.replace("%", "%%"))
    pattern = "\t".join(parts)
    if not columns:
        return [pattern % ()] * extras.count
    if len(columns) == 1:
        # One value: str % str formats it (a value is never a tuple).
        return list(map(pattern.__mod__, columns[0]))
    return list(map(pattern.__mod__, zip(*columns, strict=True)))


def extra_tails(extras: parsing.ExtraColumns) -> list[str]:
    """Each row's extra values as the start of its COPY line's end ("\t" before each)."""
    return ["\t" + fields for fields in extra_fields(extras)]


_SKU = itemgetter(1)
_NAME = itemgetter(2)
_PRICE = itemgetter(3)
_CURRENCY = itemgetter(4)
_QUANTITY = itemgetter(5)
_NULL = "\\N"
_NULL_TEXT: dict[str | None, str] = {None: _NULL}


class ItemWriter:
    """A sink for parse(): stores row tuples through ``write_rows`` and RowBlocks through
    ``write_block`` (each with the ends of its COPY lines: Ends), and notes what the
    diff and the catalogue need to know about them.

    ``repeated_skus``: while SKUs come in strictly ascending order (a cheap comparison
    of neighbours) none can repeat. Once one is out of order, the hashes of all SKUs
    (kept from the start, 8 bytes each: the SKUs themselves took ~100 MB per million
    rows) are counted at the end; fewer distinct hashes than rows reads as a repeated
    SKU. The diff then reads each import's last row per SKU instead of its rows as they
    are, which is right whether or not one repeats: a hash collision only costs a sort.

    ``ends``: with ``ends.current`` set apart from ``ends.stored`` (a config's first
    list), each row is stored current unless its SKU came before in the file (its hash
    was seen: while SKUs ascend, none was). The SKUs that came again are
    ``current_again``: the catalogue then makes their last row the current one
    (pricefeed.catalogue.first_list_done), which also mends a hash collision.

    ``take_extras`` takes a chunk's extra values before its rows (parse() hands them
    over): from the first row that has some on, every line carries the extra columns
    (``rich``; the COPY is then one with those columns: sql.COPY_RICH_ITEMS), and both
    digests cover them.

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
        write_rows: Callable[..., None],
        write_block: Callable[..., None],
        progress: Callable[[int], None] | None = None,
        ends: Ends | None = None,
    ) -> None:
        self._write_rows = write_rows
        self._write_block = write_block
        # Extra values of rows still to come, as their chunks came: first row ->
        # (count, extra_fields). A block of just those rows takes the chunk's list as
        # it is; rows otherwise grouped spread them first, row number -> the start of
        # its line's end (extra_tails). Once a row has some, every later line carries
        # the extra columns (``rich``).
        self._chunks: dict[int, tuple[int, list[str]]] = {}
        self._tails: dict[int, str] = {}
        self.rich = False
        self._progress = progress
        self._ends = ends or Ends(0)
        self.rows = 0
        self._ascending = True
        self._last_sku: str | None = None
        self._hashes = array("q")
        self._seen: set[int] | None = None
        self.current_again: set[str] = set()
        self._sku_hash = hashlib.sha256()
        self._price_hash = hashlib.sha256()
        self._rest_hash = hashlib.sha256()

    def __call__(self, rows: list[tuple]) -> None:
        ends: Sequence[str] | str = self._ends.stored
        if rows:
            skus = list(map(_SKU, rows))
            ends = self._note(skus, list(map(str, map(_PRICE, rows))))
            quantities = [("" if q is None else str(q)) for q in map(_QUANTITY, rows)]
            self._note_rest(list(map(_NAME, rows)), list(map(_CURRENCY, rows)), quantities)
            ends = self._with_tails([row[0] for row in rows], ends)
        if self.rich:
            self._write_rows(rows, ends, True)
        else:
            self._write_rows(rows, ends)
        if rows and self._progress is not None:
            self._progress(len(rows))

    def take_block(self, block: parsing.RowBlock) -> None:
        ends = self._note(block.skus, block.prices)
        quantities = (
            [""] * len(block) if block.quantities is None else [q or "" for q in block.quantities]
        )
        self._note_rest(block.names, block.currencies, quantities, rows=len(block))
        fields = self._block_fields(block.first_row, len(block))
        if fields is None:
            self._write_block(block, ends)
        else:
            self._write_block(block, ends, fields)
        if self._progress is not None:
            self._progress(len(block))

    def take_extras(self, extras: parsing.ExtraColumns) -> None:
        """A chunk's extra values, before its rows (parse() calls it)."""
        tails, chunks = self._tails, self._chunks
        first = extras.first_row
        # Rows come in file order: those before this chunk that did not come were
        # errors or headings.
        if len(tails) > 4 * extras.count:
            for row_number in [n for n in tails if n < first]:
                del tails[row_number]
        if len(chunks) > 4:
            for start in [n for n, (count, _) in chunks.items() if n + count <= first]:
                del chunks[start]
        chunks[first] = (extras.count, extra_fields(extras))

    def _spread(self) -> None:
        """The chunks' extra values as the starts of their rows' line ends."""
        tails = self._tails
        for first, (count, fields) in self._chunks.items():
            tails.update(zip(range(first, first + count), map("\t".__add__, fields), strict=True))
        self._chunks.clear()

    def _block_fields(self, first: int, count: int) -> list[str] | None:
        """The extra fields of a block's lines (None while no row had some): its
        chunk's list when the block holds just the chunk's rows (nearly always)."""
        chunk = self._chunks.pop(first, None)
        if chunk is not None and chunk[0] == count:
            self.rich = True
            fields = chunk[1]
            # The digests as _with_tails makes them: "\0".join of the tails.
            self._note_tails(("\t" + "\0\t".join(fields)).encode())
            return fields
        if chunk is not None:
            self._chunks[first] = chunk
        ends = self._with_tails(range(first, first + count), "")
        if isinstance(ends, str):
            return None
        return [tail[1:] for tail in ends]

    def _with_tails(
        self, row_numbers: Sequence[int], ends: Sequence[str] | str
    ) -> Sequence[str] | str:
        """The lines' ends with their extra values in front, once a row had some."""
        if self._chunks:
            self._spread()
        tails = self._tails
        if not tails and not self.rich:
            return ends
        found = list(map(tails.pop, row_numbers, repeat(EMPTY_TAIL)))
        if not self.rich:
            if all(tail is EMPTY_TAIL for tail in found):
                return ends
            self.rich = True
        self._note_tails("\0".join(found).encode())
        each = repeat(ends) if isinstance(ends, str) else ends
        return list(map(str.__add__, found, each))

    def _note_tails(self, text: bytes) -> None:
        # In the rows digest too: the other prices are in the diff (imports.diff).
        tails_text = text + b"\0\2"
        self._price_hash.update(tails_text)
        self._rest_hash.update(tails_text)

    def _note(self, skus: Sequence[str], prices: Sequence[str]) -> Sequence[str] | str:
        """Notes the SKUs and prices of a list or block; returns its lines' ends."""
        self.rows += len(skus)
        # Escaped, a SKU holds no newline: the joined text splits back into the same
        # SKUs, and the digest of one sequence is never that of another.
        sku_text = "\n".join(skus) + "\n"
        if "\\" in sku_text or "\r" in sku_text or sku_text.count("\n") != len(skus):
            sku_text = "\n".join(sku.translate(COPY_ESCAPES) for sku in skus) + "\n"
        self._sku_hash.update(sku_text.encode())
        self._price_hash.update(("\n".join(prices) + "\n").encode())
        hashes = list(map(hash, skus))
        if self._ascending:
            last = self._last_sku
            if (last is None or last < skus[0]) and all(map(lt, skus, islice(skus, 1, None))):
                self._last_sku = skus[-1]
            else:
                self._ascending = False
                if self._ends.current is not self._ends.stored:
                    self._seen = set(self._hashes)
        self._hashes.fromlist(hashes)  # twice as fast as extend() from a list
        if self._seen is None:
            return self._ends.current
        return self._first_seen(skus, hashes)

    def _first_seen(self, skus: Sequence[str], hashes: list[int]) -> list[str]:
        """Each row's end: current unless its SKU's hash was seen before."""
        seen, again = self._seen, self.current_again
        assert seen is not None
        current, stored = self._ends.current, self._ends.stored
        ends = []
        for sku, h in zip(skus, hashes, strict=True):
            if h in seen:
                again.add(sku)
                ends.append(stored)
            else:
                seen.add(h)
                ends.append(current)
        return ends

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
    import_id: int,
    config_id: int,
    progress: Callable[[int], None] | None = None,
    *,
    current_from: datetime | None = None,
) -> Iterator[ItemWriter]:
    """A sink for parse(): each list of rows goes into one open COPY as it comes (the
    server, a process of its own, stores it while Python reads on). Inside the caller's
    transaction, which a failed COPY leaves to be rolled back (the connection stays
    usable); the driver's errors come out as Django's (django.db.DataError, ...).
    ``progress`` is told the rows of each list or block handed over (ItemWriter).
    ``current_from``: the rows are made current in the config's catalogue
    from that moment as they are stored, the first row of each SKU (ItemWriter)."""
    ends = Ends(config_id, current_from)
    # The COPY runs on the driver's cursor: its errors are made Django's here (a value
    # the server refuses is a django.db.DataError, a permanent error for the import).
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        contextlib.ExitStack() as plain,
        contextlib.ExitStack() as rich,
    ):
        copy = plain.enter_context(cursor.cursor.copy(sql.COPY_ITEMS))
        # Written from this thread: the write returns once the text is in the
        # socket's buffer, and the server stores it while the parser reads on. A
        # thread feeding the COPY (it was core.copyfeed) only made the two threads
        # take turns at the GIL: ~20% slower for 200k CSV rows (bench/parse.py).
        # Lines with extra values (ItemWriter.rich) go into a COPY with their columns:
        # the plain one is finished when the first comes.
        current = [copy, False]

        def copy_for(with_extras: bool):
            if with_extras and not current[1]:
                plain.close()
                current[:] = [rich.enter_context(cursor.cursor.copy(sql.COPY_RICH_ITEMS)), True]
            return current[0]

        def write_rows(
            rows: list[tuple], line_ends: Sequence[str] | str, with_extras: bool = False
        ) -> None:
            target = copy_for(with_extras)
            for start in range(0, len(rows), _COPY_CHUNK):
                chunk = rows[start : start + _COPY_CHUNK]
                chunk_ends = line_ends
                if not isinstance(line_ends, str):
                    chunk_ends = line_ends[start : start + _COPY_CHUNK]
                if with_extras:
                    target.write(_copy_text(import_id, chunk, chunk_ends, rich=True))
                else:
                    target.write(_copy_text(import_id, chunk, chunk_ends))

        def write_block(
            block: parsing.RowBlock,
            line_ends: Sequence[str] | str,
            fields: Sequence[str] | None = None,
        ) -> None:
            if fields is None:
                copy_for(False).write(_block_copy_text(import_id, block, line_ends))
            else:
                copy_for(True).write(_block_copy_text(import_id, block, line_ends, fields))

        yield ItemWriter(write_rows, write_block, progress, ends)


def insert_items(
    import_id: int,
    rows: list[tuple],
    config_id: int,
    extras: Sequence[parsing.ExtraColumns] = (),
) -> None:
    """Stores rows, not current, with COPY (and their extra values, if any)."""
    stored = Ends(config_id).stored
    ends: Sequence[str] | str = stored
    tails: dict[int, str] = {}
    for chunk in extras:
        numbers = range(chunk.first_row, chunk.first_row + chunk.count)
        tails.update(zip(numbers, extra_tails(chunk), strict=True))
    rich = bool(tails)
    if rich:
        ends = [tails.get(row[0], EMPTY_TAIL) + stored for row in rows]
    with connection.wrap_database_errors, connection.cursor() as cursor:
        with cursor.cursor.copy(sql.COPY_RICH_ITEMS if rich else sql.COPY_ITEMS) as copy:
            for start in range(0, len(rows), _COPY_CHUNK):
                chunk_ends = ends if isinstance(ends, str) else ends[start : start + _COPY_CHUNK]
                copy.write(
                    _copy_text(import_id, rows[start : start + _COPY_CHUNK], chunk_ends, rich=rich)
                )
