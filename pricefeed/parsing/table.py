"""A table of rows, whatever its source: the header found in its first rows, then every
row below it handed to the conversion loops of rows.py."""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, islice
from operator import itemgetter

from . import messages as m
from .deadline import Deadline
from .errors import (
    EmptyFile,
    LineTooLong,
    MissingColumns,
    NoHeaderRow,
    ParseError,
)
from .headers import (
    SCAN_ROWS,
    SYNONYMS,
    Header,
    combine,
    map_by_synonyms,
    norm,
)
from .numbers import (
    NumberReader,
    currency_in_text,
)
from .plainlines import PlainLines
from .rows import (
    ABSENT,
    RowContext,
    Sink,
    cell_text,
    cut_rows,
    first_priced_row,
    read_plain_rows,
    read_text_rows,
    read_workbook_rows,
)
from .types import (
    FIELDS,
    REQUIRED_FIELDS,
    ColumnCuts,
    Limits,
    ParsedFile,
    ParseOptions,
    index_to_letter,
    limit_name,
)

# A row of only numbers and separators is data, never a header.
_NUMBERISH = re.compile(r"[\s\d.,+\-\u00a0\u202f]+")


class Table:
    """Rows from a reader: lists of str (text) or of typed cells (workbooks)."""

    def __init__(
        self,
        rows: Iterable[list],
        *,
        typed: bool,
        col_offset: int = 0,
        merged: list | None = None,
    ) -> None:
        self.source = rows
        self.rows: Iterator[list] = iter(()) if isinstance(rows, PlainLines) else iter(rows)
        self.typed = typed
        self.col_offset = col_offset
        self.merged = merged or []

    def head(self, n: int) -> list[list]:
        if isinstance(self.source, PlainLines):
            return self.source.head(n)
        return list(islice(self.rows, n))

    @property
    def marked(self) -> dict[int, str]:
        """Rows of a text table that were not read (0-based index -> reason)."""
        return getattr(self.source, "marked", {})

    @property
    def cuts(self) -> ColumnCuts | None:
        """Rows the source cut to Limits.max_columns itself."""
        return getattr(self.source, "cuts", None)


def head_texts(
    table: Table, head: list[list], width: int, deadline: Deadline | None = None
) -> list[list[str]]:
    if not table.typed:
        return [[c.strip() for c in row] for row in head]
    texts = [[cell_text(v) for v in row] for row in head]
    # Merged cells hold their value in the top-left cell only; for header detection
    # every cell of a merged range reads that value (within the first ``width`` columns).
    off = table.col_offset
    for (r0, c0), (r1, c1) in table.merged:
        if r0 >= len(texts) or c0 - off < 0 or c0 - off >= len(texts[r0]):
            continue
        if deadline is not None:
            deadline.check(m.IN_HEADER_SEARCH_MERGED)
        value = texts[r0][c0 - off]
        for r in range(r0, min(r1, len(texts) - 1) + 1):
            row = texts[r]
            for c in range(c0 - off, min(c1 - off, width - 1) + 1):
                while len(row) <= c:
                    row.append("")
                if not row[c]:
                    row[c] = value
    return texts


def read_table(
    table: Table,
    options: ParseOptions,
    limits: Limits,
    fmt: str,
    sink: Sink | None = None,
    *,
    deadline: Deadline | None = None,
    nul: bool = True,
) -> ParsedFile:
    """The header found in the table's first rows, then every row below it converted.

    Rows are cut to Limits.max_columns cells (a warning says how many were); rows the
    source could not read (Table.marked) are row errors below the header and warnings
    above it, and when no header is found with one of them in the scanned rows, the
    refusal names it (LineTooLong for an over-long line). ``nul`` False: the table holds
    no NUL character. The time budget is ``deadline``'s (Limits.max_seconds)."""
    deadline = deadline or Deadline(limits)
    width = limits.max_columns
    head = table.head(SCAN_ROWS + 1)
    if not head:
        raise EmptyFile(m.NO_ROWS)
    cuts = ColumnCuts()
    if max(map(len, head)) > width:
        head = cut_rows(head, 1, width, cuts)
    texts = head_texts(table, head, width, deadline)
    try:
        header = find_header(texts, options, table.col_offset, deadline)
    except (NoHeaderRow, MissingColumns) as exc:
        _refuse_with_unread_rows(exc, table.marked, len(head))
        raise
    num = NumberReader(options.number_format)
    cols = header.columns
    price_header = header.texts.get("price", "")
    header_currency = (
        currency_in_text(price_header) if price_header and "price" not in header.by_letter else None
    )
    ctx = RowContext(
        columns=[cols.get(f, ABSENT) for f in FIELDS],
        header_norm=(
            (norm(header.cells[cols["sku"]]), norm(header.cells[cols["price"]]))
            if header.row >= 0 and max(cols["sku"], cols["price"]) < len(header.cells)
            else None
        ),
        currency=header_currency or options.default_currency.strip(),
        limits=limits,
        num=num,
        sink=sink,
        deadline=deadline,
        nul=nul,
        positive=not options.allow_nonpositive,
    )
    first = header.row + 1
    if header.row < 0:  # no header: data starts at the first row with a number as price
        first = first_priced_row(texts, cols["price"])
        ctx.skipped = first
    with gc_paused():
        if table.typed:
            read_workbook_rows(chain(head[first:], table.rows), first + 1, ctx)
        elif isinstance(table.source, PlainLines):
            read_plain_rows(head[first:], table.source, first + 1, ctx)
        else:
            read_text_rows(chain(head[first:], table.rows), first + 1, ctx)
    ctx.fix_ambiguous()
    warnings = _letters_read_as_headers(
        header, options, table.col_offset, max(map(len, texts), default=0)
    )
    warnings += _report_unread_rows(table.marked, first, ctx)
    for more in (ctx.cuts, table.cuts):
        if more is not None:
            cuts.add(more)
    cut = cuts.warning(width)
    if cut:
        warnings.append(cut)
    ok = ctx.sent + len(ctx.rows)
    if sink is not None and ctx.rows:
        sink(ctx.rows)
        ctx.rows = []
    return ParsedFile(
        format=fmt,
        rows=ctx.rows,
        rows_ok=ok,
        errors=ctx.errors,
        rows_total=ctx.total,
        header_row=header.row + 1 if header.row >= 0 else 0,
        columns=header.texts,
        skipped_rows=ctx.skipped,
        skipped_headings=ctx.headings,
        skipped_totals=ctx.totals,
        warnings=warnings,
        failed_skus=ctx.failed_skus,
    )


def _report_unread_rows(marked: dict[int, str], first: int, ctx: RowContext) -> list[str]:
    """Rows the source did not read (read as empty, so counted as skipped): from the
    first data row on each is a row error; above it, a warning (returned)."""
    warnings = []
    errors = False
    for index in sorted(marked):
        if index >= first:
            ctx.skipped -= 1
            ctx.total += 1
            if ctx.total > ctx.limits.max_rows:  # an unread row is a data row too
                raise ctx.too_many()
            ctx.error(index + 1, marked[index])
            errors = True
        else:
            warnings.append(m.ABOVE_THE_DATA % {"problem": marked[index]})
    if errors:
        ctx.errors.sort(key=itemgetter(0))
    return warnings


def _refuse_with_unread_rows(exc: ParseError, marked: dict[int, str], scanned: int) -> None:
    """No header was found: when a row in the scanned ones was not read, say so, since
    it may be the header (an over-long line refuses the file as LineTooLong)."""
    unread = [marked[i] for i in sorted(marked) if i < scanned]
    if not unread:
        return
    shown = "; ".join(unread[:3])
    if any(limit_name("max_line_bytes") in reason for reason in unread):
        raise LineTooLong(m.LONG_LINE_THEN % {"unread": shown, "error": exc}) from None
    raise type(exc)(m.UNREAD_ROWS % {"error": exc, "unread": shown}) from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a million row tuples are made: the
    rows hold no cycles, and the collector's repeated scans of the growing list cost
    a third of the CSV time. The previous state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- header -------------------------------------------------------------------------


def find_header(
    texts: list[list[str]],
    options: ParseOptions,
    col_offset: int,
    deadline: Deadline | None = None,
) -> Header:
    configured = {f: norm(t) for f, t in options.column_texts().items()}
    letters = {f: i - col_offset for f, i in options.column_letters().items()}
    # A letter ("ID", "No") that is also a header text in the row read as the header
    # names that column: the text wins over the letter (ParseOptions.column_letters).
    as_text = {f: norm(options.columns[f]) for f in letters}
    width = max((len(r) for r in texts), default=0)
    for f, c in letters.items():
        if c >= width and not any(as_text[f] in map(norm, row) for row in texts):
            last_letter = index_to_letter(col_offset + width - 1) if width else "A"
            raise MissingColumns(
                m.COLUMN_PAST_TABLE
                % {"column": options.columns[f].strip().upper(), "field": f, "last": last_letter}
            )
    best: tuple[int, Header] | None = None
    limit = min(SCAN_ROWS, len(texts))
    for i in range(limit):
        if deadline is not None:
            deadline.check(m.IN_HEADER_SEARCH % {"row": i + 1})
        candidates = [(i, texts[i])]
        # A two-line header ("Цены" over "Опт | Розница") has a top line of several
        # cells; a one-cell title directly above the header is not part of it.
        if (
            i + 1 < len(texts)
            and _header_like(texts[i + 1])
            and sum(1 for cell in texts[i] if cell) >= 2
        ):
            candidates.append((i + 1, combine(texts[i], texts[i + 1])))
        for last, cells in candidates:
            normed = [norm(c) for c in cells]
            columns: dict[str, int] = {}
            for f, want in configured.items():
                if want in normed:
                    columns[f] = normed.index(want)
            found_configured = len(columns)
            by_letter = set()
            for f, c in letters.items():
                if as_text[f] in normed:
                    columns[f] = normed.index(as_text[f])
                else:
                    columns[f] = c
                    by_letter.add(f)
            synonyms = map_by_synonyms(normed, columns)
            columns.update(synonyms)
            header = Header(last, columns, {}, cells, frozenset(by_letter))
            if configured:
                ok = found_configured == len(configured)
            else:
                named = {f for f in synonyms} | {
                    f
                    for f in letters
                    if 0 <= columns[f] < len(normed) and _texty(normed[columns[f]])
                }
                ok = bool(named & {"sku", "name"}) and "price" in named
            if ok:
                return _finish_header(header, options)
            weight = found_configured * 10 + len(synonyms)
            if (found_configured or len(synonyms) >= 2) and (best is None or weight > best[0]):
                best = (weight, header)
    if all(f in letters for f in REQUIRED_FIELDS):
        header = Header(-1, dict(letters), {}, [], frozenset(letters))
        return _finish_header(header, options)
    if best is not None:
        _raise_missing(best[1], options)
    if configured:
        wanted = ", ".join(f"'{t}'" for t in options.column_texts().values())
        raise NoHeaderRow(m.NO_HEADER_WITH % {"rows": SCAN_ROWS, "wanted": wanted})
    raise NoHeaderRow(m.NO_HEADER % {"rows": SCAN_ROWS})


def _header_like(row: list[str]) -> bool:
    """A line that can continue a header: some text, no numbers."""
    return any(row) and not any(c and _NUMBERISH.fullmatch(c) for c in row)


def _texty(cell: str) -> bool:
    return bool(cell) and not _NUMBERISH.fullmatch(cell)


def _finish_header(header: Header, options: ParseOptions) -> Header:
    missing = [f for f in REQUIRED_FIELDS if f not in header.columns]
    if missing:
        _raise_missing(header, options)
    texts = {}
    for f in FIELDS:
        if f not in header.columns:
            continue
        if f in header.by_letter:
            texts[f] = options.columns[f].strip().upper()
        else:
            # Shown to operators and stored as JSON, which cannot hold a NUL.
            texts[f] = header.cells[header.columns[f]].strip().replace("\x00", "")
    # Columns left of the used range (letters before the sheet's first column) are
    # empty: point them past every row.
    header.columns = {f: (c if c >= 0 else ABSENT) for f, c in header.columns.items()}
    header.texts = texts
    return header


def _letters_read_as_headers(
    header: Header, options: ParseOptions, col_offset: int, width: int
) -> list[str]:
    """A warning for each configured letter read as the header of that text although the
    table has a column of that letter too ("L" the header of a size column in F, not
    column L): the one case the configuration leaves open. "ID" in a table narrower
    than column ID says nothing."""
    out = []
    for f, index in options.column_letters().items():
        column = header.columns.get(f, ABSENT)
        if f in header.by_letter or column == ABSENT or column + col_offset == index:
            continue
        if not 0 <= index - col_offset < width:
            continue
        out.append(
            m.LETTER_READ_AS_HEADER
            % {
                "field": f,
                "text": repr(options.columns[f].strip()),
                "column": index_to_letter(column + col_offset),
            }
        )
    return out


def _raise_missing(header: Header, options: ParseOptions) -> None:
    configured = options.column_texts()
    normed = [norm(c) for c in header.cells]
    missing = []
    for f, text in configured.items():
        if norm(text) not in normed:
            missing.append(f"{f} ('{text}')")
    for f in REQUIRED_FIELDS:
        if f not in header.columns and f not in configured:
            examples = ", ".join(SYNONYMS[f][:4])
            missing.append(m.MISSING_EXAMPLES % {"field": f, "examples": examples})
    seen = [c for c in header.cells if c][:20]
    cells = ", ".join(f"'{c}'" for c in seen) or m.NO_CELLS
    raise MissingColumns(
        m.MISSING_COLUMNS % {"missing": "; ".join(missing), "row": header.row + 1, "cells": cells}
    )
