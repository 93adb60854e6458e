"""A table of rows, whatever its source: the header found in its first rows, then every
row below it handed to the conversion loops of rows.py."""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, islice
from operator import itemgetter

from core.storedtext import Text

from . import messages as m
from .deadline import Deadline
from .errors import (
    EmptyFile,
    LineTooLong,
    MissingColumns,
    NoHeaderRow,
    ParseError,
)
from .extras import ExtraPlan
from .headers import (
    SCAN_ROWS,
    SYNONYMS,
    Header,
    combine,
    map_by_synonyms,
    norm,
    price_type_of,
    score,
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
    ALL_FIELDS,
    EXTRA_FIELDS,
    FIELDS,
    MAX_WAREHOUSES,
    REQUIRED_FIELDS,
    ColumnCuts,
    Limits,
    ParsedFile,
    ParseOptions,
    index_to_letter,
    is_column_letter,
    letter_to_index,
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
    extra_warnings = _plan_extras(header, options, table.col_offset, ctx)
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
    warnings += extra_warnings
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
        extras=ctx.extras,
        row_warnings=ctx.row_warnings,
        rows_warned=ctx.warned,
    )


def _report_unread_rows(marked: dict[int, str], first: int, ctx: RowContext) -> list[str]:
    """Rows the source did not read (read as empty, so counted as skipped): from the
    first data row on each is a row error; above it, a warning (returned)."""
    warnings: list[str] = []
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
            warnings.append(Text(m.ABOVE_THE_DATA, problem=marked[index]))
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
        raise LineTooLong(Text(m.LONG_LINE_THEN, unread=shown, error=exc)) from None
    raise type(exc)(Text(m.UNREAD_ROWS, error=exc, unread=shown)) from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a million row tuples are made: the
    rows hold no cycles, and the collector's repeated scans of the growing list cost
    a third of the CSV time. The previous state is restored. (Also what our catalogue's
    loaders and the matching cascade run under: products.loaders, products.linking.)"""
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
    """The header among the first SCAN_ROWS rows of ``texts``: the first row (or pair of
    rows, for a two-line header) that names every configured column, or, with none
    configured, a SKU or name and a price. Raises MissingColumns or NoHeaderRow, naming
    the best row seen."""
    wanted = _Wanted(options, col_offset)
    _check_letters_in_table(texts, wanted, col_offset)
    best: tuple[int, Header] | None = None
    for i in range(min(SCAN_ROWS, len(texts))):
        if deadline is not None:
            deadline.check(Text(m.IN_HEADER_SEARCH, row=i + 1))
        for last, cells in _header_candidates(texts, i):
            header, weight, complete = wanted.read(last, cells)
            if complete:
                return _finish_header(header, options)
            if weight and (best is None or weight > best[0]):
                best = (weight, header)
    if all(f in wanted.letters for f in REQUIRED_FIELDS):
        header = Header(-1, dict(wanted.letters), {}, [], frozenset(wanted.letters))
        return _finish_header(header, options)
    if best is not None:
        _raise_missing(best[1], options)
    if wanted.configured:
        names = ", ".join(f"'{t}'" for t in options.column_texts().values())
        raise NoHeaderRow(Text(m.NO_HEADER_WITH, rows=SCAN_ROWS, wanted=names))
    raise NoHeaderRow(Text(m.NO_HEADER, rows=SCAN_ROWS))


class _Wanted:
    """The columns a config asks for, as find_header compares them with a row: header
    texts (normalised), and letters (as indexes into the row; a letter that is also a
    header text in the row, "ID" or "No", names that column instead:
    ParseOptions.column_letters)."""

    def __init__(self, options: ParseOptions, col_offset: int) -> None:
        self.configured = {f: norm(t) for f, t in options.column_texts().items()}
        self.letters = {f: i - col_offset for f, i in options.column_letters().items()}
        self.as_text = {f: norm(options.columns[f]) for f in self.letters}
        self.shown = {f: options.columns[f].strip().upper() for f in self.letters}

    def read(self, last: int, cells: list[str]) -> tuple[Header, int, bool]:
        """``cells`` (the header's text, ending at row ``last``) read as the header: the
        Header, its weight as the best row so far (0: not a candidate) and whether it
        names every column needed."""
        normed = [norm(c) for c in cells]
        columns = {f: normed.index(want) for f, want in self.configured.items() if want in normed}
        found_configured = len(columns)
        by_letter = set()
        for f, c in self.letters.items():
            if self.as_text[f] in normed:
                columns[f] = normed.index(self.as_text[f])
            else:
                columns[f] = c
                by_letter.add(f)
        synonyms = map_by_synonyms(normed, columns)
        if "sku" not in columns and "sku" not in synonyms and "article" in synonyms:
            # No code column: the maker's article is the SKU (and not an article too).
            synonyms["sku"] = synonyms.pop("article")
        columns.update(synonyms)
        header = Header(last, columns, {}, cells, frozenset(by_letter))
        if self.configured:
            complete = found_configured == len(self.configured)
        else:
            named = set(synonyms) | {
                f
                for f in self.letters
                if 0 <= columns[f] < len(normed) and _texty(normed[columns[f]])
            }
            complete = bool(named & {"sku", "name"}) and "price" in named
        candidate = found_configured or len(synonyms) >= 2
        weight = found_configured * 10 + len(synonyms) if candidate else 0
        return header, weight, complete


def _check_letters_in_table(texts: list[list[str]], wanted: _Wanted, col_offset: int) -> None:
    """A configured letter past the table's last column, and not a header text in any
    row either, is a configuration error, said before any row is read."""
    width = max((len(r) for r in texts), default=0)
    for f, c in wanted.letters.items():
        if c < width or any(wanted.as_text[f] in map(norm, row) for row in texts):
            continue
        last_letter = index_to_letter(col_offset + width - 1) if width else "A"
        raise MissingColumns(
            Text(m.COLUMN_PAST_TABLE, column=wanted.shown[f], field=f, last=last_letter)
        )


def _header_candidates(texts: list[list[str]], i: int) -> list[tuple[int, list[str]]]:
    """Row ``i`` as a header, and with the next row when the two can be one: a two-line
    header ("Цены" over "Опт | Розница") has a top line of several cells; a one-cell
    title directly above the header is not part of it."""
    candidates = [(i, texts[i])]
    if i + 1 < len(texts) and _header_like(texts[i + 1]) and _header_top_like(texts[i]):
        candidates.append((i + 1, combine(texts[i], texts[i + 1])))
    return candidates


def _header_top_like(row: list[str]) -> bool:
    """A line that can be the top of a two-line header: at least two distinct texts
    (a title merged across the row reads as one text in every cell), none of them a
    number or a sentence ("Дилерский прайс-лист. Цены в рублях с НДС")."""
    distinct = {c for c in row if c}
    return (
        len(distinct) >= 2
        and not any(_NUMBERISH.fullmatch(c) for c in distinct)
        and not any(len(c) > 40 or ". " in c for c in distinct)
    )


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
    for f in ALL_FIELDS:
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
    out: list[str] = []
    for f, index in options.column_letters().items():
        column = header.columns.get(f, ABSENT)
        if f in header.by_letter or column == ABSENT or column + col_offset == index:
            continue
        if not 0 <= index - col_offset < width:
            continue
        out.append(
            Text(
                m.LETTER_READ_AS_HEADER,
                field=f,
                text=repr(options.columns[f].strip()),
                column=index_to_letter(column + col_offset),
            )
        )
    return out


# A missing SKU: the supplier's code, or the maker's article when there is none.
_MISSING_EXAMPLES = {"sku": ("Код товара", "Код", "Артикул", "SKU")}


def _raise_missing(header: Header, options: ParseOptions) -> None:
    configured = options.column_texts()
    normed = [norm(c) for c in header.cells]
    missing = []
    for f, text in configured.items():
        if norm(text) not in normed:
            missing.append(f"{f} ('{text}')")
    for f in REQUIRED_FIELDS:
        if f not in header.columns and f not in configured:
            examples = ", ".join(_MISSING_EXAMPLES.get(f, SYNONYMS[f][:4]))
            missing.append(Text(m.MISSING_EXAMPLES, field=f, examples=examples))
    seen = [c for c in header.cells if c][:20]
    cells = ", ".join(f"'{c}'" for c in seen) or m.NO_CELLS
    raise MissingColumns(
        Text(m.MISSING_COLUMNS, missing="; ".join(missing), row=header.row + 1, cells=cells)
    )


# --- extra values ---------------------------------------------------------------------


def _plan_extras(header: Header, options: ParseOptions, col_offset: int, ctx) -> list[str]:
    """Sets ctx.extra, the columns of the values beyond FIELDS (extras.ExtraPlan): the
    extra fields the header has, the price and stock columns the options map or, when
    they map none, those the header names (a price column of a known type: "РРЦ",
    "Цена розн."; two or more stock columns: each a warehouse, by its header).
    Returns warnings for mapped price and stock columns that are not in the table."""
    cols = header.columns
    normed = [norm(c) for c in header.cells]
    used = set(cols.values())
    warnings: list[str] = []

    def find(value: str) -> int:
        text = norm(value)
        if text in normed:
            return normed.index(text)
        if is_column_letter(value):
            return letter_to_index(value.strip()) - col_offset
        return -1

    prices: list[tuple[str, int, str]] = []
    if options.prices:
        for code, value in options.prices.items():
            col = find(value)
            if col < 0:
                warnings.append(Text(m.EXTRA_COLUMN_MISSING, column=repr(value), what=code))
                continue
            fixed = options.price_currencies.get(code, "").strip()
            if not fixed and 0 <= col < len(header.cells):
                fixed = currency_in_text(header.cells[col]) or ""
            prices.append((code, col, fixed))
            header.texts[f"price.{code}"] = (
                header.cells[col] if 0 <= col < len(header.cells) else value.strip().upper()
            )
    elif header.row >= 0:
        main = price_type_of(normed[cols["price"]]) if cols["price"] < len(normed) else ""
        seen = {main} if main else set()
        for col, text in enumerate(normed):
            if col in used or not score(text, "price"):
                continue
            code = price_type_of(text)
            if code and code not in seen:
                seen.add(code)
                prices.append((code, col, currency_in_text(header.cells[col]) or ""))
                header.texts[f"price.{code}"] = header.cells[col]
    stocks: list[tuple[str, int]] = []
    if options.stocks:
        for warehouse, value in options.stocks.items():
            col = find(value)
            if col < 0:
                warnings.append(Text(m.EXTRA_COLUMN_MISSING, column=repr(value), what=warehouse))
                continue
            stocks.append((warehouse, col))
    elif header.row >= 0 and "quantity" in cols:
        more = [
            col
            for col, text in enumerate(normed)
            if col not in used and (found := score(text, "quantity")) and found[0]
        ]
        if more:
            for col in [cols["quantity"], *more][:MAX_WAREHOUSES]:
                if col < len(header.cells):
                    stocks.append((header.cells[col].replace("\x00", "").strip()[:100], col))
    for warehouse, col in stocks:
        header.texts[f"stock.{warehouse}"] = (
            header.cells[col] if 0 <= col < len(header.cells) else index_to_letter(col)
        )
    ctx.extra = ExtraPlan(
        columns={f: cols[f] for f in EXTRA_FIELDS if f in cols and cols[f] != ABSENT},
        prices=[(code, col, fixed) for code, col, fixed in prices if col >= 0],
        stocks=[(w, col) for w, col in stocks if col >= 0],
        core=ctx.columns,
        num=ctx.num,
        default_currency=ctx.currency,
    )
    return warnings
