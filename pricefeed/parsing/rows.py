"""Row conversion: cells of a table (text or typed workbook cells) to typed price rows and
row errors, a chunk at a time, a column at a time where a chunk allows it.

The hot loops of the library: every name they use is bound locally, and a chunk is
converted column-wise when all its cells are plain, row by row otherwise."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, DecimalException
from itertools import islice, repeat
from operator import eq, itemgetter
from typing import Any

from core.storedtext import Text

from . import messages as m
from .deadline import Deadline
from .errors import (
    TooManyRows,
)
from .headers import (
    SCAN_ROWS,
    norm,
)
from .numbers import (
    FLOAT_LIMIT,
    LIMIT,
    WHOLE_DIGITS,
    NumberReader,
    float_to_decimal,
    make_decimal,
    normalise_currency,
)
from .plainlines import PlainLines
from .types import (
    CURRENCY_MAX_LENGTH,
    SKU_MAX_LENGTH,
    ColumnCuts,
    ExtraColumns,
    Limits,
    Row,
    RowBlock,
)
from .values import read_stock

_DIGITS = frozenset("0123456789")
ABSENT = 1 << 30  # column index of a field that is not mapped: always past the row's end
NUL = "\x00"  # PostgreSQL text cannot hold it


Sink = Callable[[list[Row]], None]
SINK_CHUNK = 16_384  # rows handed to a sink at a time


def cell_text(value: object) -> str:
    """A cell as text: numbers without a spurious ".0", dates in ISO form."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return "" if value is None else str(value).strip()


def sku_problem(sku: str) -> str | None:
    """Why a non-empty SKU cannot be stored, or None."""
    if len(sku) > SKU_MAX_LENGTH:
        return Text(m.SKU_TOO_LONG, limit=SKU_MAX_LENGTH, length=len(sku))
    if NUL in sku:
        return m.SKU_NUL
    return None


def currency_problem(currency: str) -> str | None:
    """Why a currency cannot be stored, or None."""
    if len(currency) > CURRENCY_MAX_LENGTH:
        shown = currency if len(currency) <= 40 else currency[:40] + "..."
        return Text(m.CURRENCY_TOO_LONG, value=repr(shown), limit=CURRENCY_MAX_LENGTH)
    if NUL in currency:
        return m.CURRENCY_NUL
    return None


def cut_rows(chunk: list[list], first_row: int, width: int, cuts: ColumnCuts) -> list[list]:
    """``chunk`` (rows numbered from ``first_row``) with every row cut to ``width`` cells."""
    out = []
    for i, row in enumerate(chunk):
        if len(row) > width:
            cuts.note(first_row + i)
            row = row[:width]
        out.append(row)
    return out


class RowContext:
    """Accumulates the rows of one file."""

    def __init__(
        self,
        *,
        columns,
        header_norm,
        currency,
        limits: Limits,
        num,
        sink=None,
        deadline: Deadline | None = None,
        nul: bool = True,
        positive: bool = False,
    ) -> None:
        self.columns = columns
        self.header_norm = header_norm
        self.currency = currency
        self.limits = limits
        self.num = num
        self.deadline = deadline or Deadline(limits)
        # Whether a text may hold NUL (False: the file has no NUL byte at all, and the row
        # loops need not look).
        self.nul = nul
        # Whether a price must be above zero (ParseOptions.allow_nonpositive False).
        self.positive = positive
        self.cuts = ColumnCuts()
        self.rows: list[tuple] = []
        self.errors: list[tuple[int, str]] = []
        self.failed_skus: list[str] = []
        self.total = 0
        self.skipped = 0
        # Of the skipped rows: group and section headings (and notes), totals rows.
        self.headings = 0
        self.totals = 0
        self.ambiguous: list[tuple[int, object, object]] = []
        # Text tables: quantity and currency cells already read (shared by both paths).
        self.qcache: dict[str, Decimal | None] = {}
        self.qtexts: dict[str, str | None] = {}  # the same as text, for RowBlocks
        self.ccache: dict[str, str | None] = {}
        # Workbooks: quantity cells already read, as Decimal or, for a block sink, as
        # text (a stock figure repeats across the whole file, not only in one chunk).
        self.typed_qcache: dict[object, Decimal | str | None] = {}
        # What a stock cell's text reads as (">50" is 50, "нет" 0: values.read_stock).
        self.quantity: Callable[[str], Decimal | None] = lambda text: read_stock(text, num)[0]
        # Values beyond FIELDS (extras.ExtraPlan; None: the file has no such column, and
        # only headings or stock text may give some), and where they went without a
        # sink that takes them.
        self.extra: Any = None
        self.extras: list[ExtraColumns] = []
        self.row_warnings: list[tuple[int, str]] = []
        self.warned = 0
        self.sink = sink
        # The text column path hands such a sink RowBlocks instead of row tuples.
        self.blocks = callable(getattr(sink, "take_block", None))
        self.sent = 0  # rows handed to the sink
        # The hot loops call flush() when the row list reaches this length.
        self.flush_at = SINK_CHUNK if sink is not None else 1 << 62

    def flush(self) -> None:
        """Hands the final rows to the sink and empties the row list (in place: the hot
        loops hold its append method)."""
        rows = self.rows
        if self.ambiguous:
            if self.num.decimal is not None:
                self.fix_ambiguous()
                self.ambiguous = []
            else:
                # Rows from the first undecided one on wait for the file to decide.
                cut = self.ambiguous[0][0]
                if cut:
                    self.sink(rows[:cut])
                    del rows[:cut]
                    self.sent += cut
                    self.ambiguous = [(i - cut, p, q) for i, p, q in self.ambiguous]
                self.flush_at = len(rows) + SINK_CHUNK
                return
        self.sink(rows)
        self.sent += len(rows)
        rows.clear()
        self.flush_at = SINK_CHUNK

    def take_columns(
        self,
        first_row: int,
        skus: Sequence[str],
        names: Sequence[str] | None,
        *,
        texts: list[str] | None = None,
        values: list[Decimal] | None = None,
        currencies: Sequence[str | None] | None,
        quantities: list | None,
    ) -> None:
        """Takes a chunk of good rows converted a column at a time (None: the column is
        absent). Prices come as decimal ``texts`` or as Decimal ``values``, whichever the
        caller has; quantities as Decimals, or as text for a block sink. A block sink gets
        them as one RowBlock, anything else as row tuples."""
        n = len(skus)
        self.total += n
        if self.blocks:
            if self.rows:
                self.flush()  # rows of the row loop first: the file's order
            self.sink.take_block(
                RowBlock(
                    first_row=first_row,
                    skus=skus,
                    names="" if names is None else names,
                    prices=texts if texts is not None else list(map(str, values or ())),
                    # Callers fill every currency they pass: no None is left.
                    currencies=self.currency if currencies is None else currencies,  # type: ignore[arg-type]
                    quantities=quantities,
                )
            )
            self.sent += n
            return
        self.rows.extend(
            zip(
                range(first_row, first_row + n),
                skus,
                repeat("") if names is None else names,
                values if values is not None else map(Decimal, texts or ()),
                repeat(self.currency) if currencies is None else currencies,
                repeat(None) if quantities is None else quantities,
                strict=False,  # repeat() stands in for absent columns
            )
        )
        if len(self.rows) >= self.flush_at:
            self.flush()

    def take_extras(self, extras: ExtraColumns) -> None:
        """A chunk's values beyond FIELDS: to a sink that takes them (before the rows
        they belong to), kept without a sink."""
        take = getattr(self.sink, "take_extras", None)
        if take is not None:
            take(extras)
        elif self.sink is None:
            self.extras.append(extras)

    def warn(self, row_number: int, reason: str) -> None:
        """A row stored with something to say (an invalid barcode)."""
        self.warned += 1
        if len(self.row_warnings) < self.limits.max_errors:
            self.row_warnings.append((row_number, reason))

    def error(self, row_number: int, reason: str, sku: str = "") -> None:
        """A failed row, and its SKU when it has one (a PARTIAL import keeps that SKU's
        value in the catalogue)."""
        if len(self.errors) < self.limits.max_errors:
            self.errors.append((row_number, reason))
            if sku:
                self.failed_skus.append(sku)

    def too_many(self) -> TooManyRows:
        return TooManyRows(Text(m.TOO_MANY_ROWS, limit=self.limits.max_rows))

    def is_repeated_header(self, sku: str, price: str) -> bool:
        """A page header repeated inside the data (long lists printed page by page)."""
        return self.header_norm is not None and (norm(sku), norm(price)) == self.header_norm

    def fix_ambiguous(self) -> None:
        """Re-read the ambiguous numbers met before the file settled its convention."""
        num = self.num
        if not self.ambiguous or num.decimal is None:
            return
        for index, price, quantity in self.ambiguous:
            r = self.rows[index]
            new_price = num.read(price)[0] if isinstance(price, str) else r[3]
            new_qty = self.quantity(quantity) if isinstance(quantity, str) and quantity else r[5]
            self.rows[index] = (r[0], r[1], r[2], new_price, r[4], new_qty)


def first_priced_row(texts: list[list[str]], price_col: int) -> int:
    for i, row in enumerate(texts[:SCAN_ROWS]):
        if price_col < len(row) and row[price_col]:
            try:
                NumberReader("dot").read(row[price_col])
            except ValueError:
                continue
            return i
    return 0


TEXT_CHUNK = 2048  # rows a text table is read in, column by column where possible
_SEP = "\x00"  # joins a column's texts; a NUL inside a text never reaches these checks
# Prices that need no Decimal to be known good, once spaces are dropped and the decimal
# separator is a point: what str(Decimal(text)) gives back up to leading zeros, and what
# numeric(18, 4) takes as it is. At most 13 digits before the point (a 14-digit one may
# round up to 10**14: numbers.LIMIT) and 28 after it (numbers.NUMBER_CONTEXT): others
# are judged as Decimals.
_DECIMAL_TEXTS = re.compile(
    r"-?[0-9]{1,13}(?:\.[0-9]{1,28})?(?:\x00-?[0-9]{1,13}(?:\.[0-9]{1,28})?)*"
)
# Prices the row loop's fast path takes (ASCII, a digit or "-" and a digit first, a
# digit last), joined by _SEP: a whole column is checked by one match.
_PLAIN_PRICES = re.compile(r"-?[0-9](?:[^\x00]*[0-9])?(?:\x00-?[0-9](?:[^\x00]*[0-9])?)*")
# Deletes zeros and points: a price in such a column (spaces dropped, a point for the
# separator) made of them alone is zero (or not a number: the row loop tells).
_ZEROS = str.maketrans("", "", "0.")


def _not_positive(joined: str) -> bool:
    """Whether a price of ``joined`` (_SEP between them) may be zero or below: a minus
    sign anywhere, or a price of zeros and points alone, which leaves an empty text
    between separators once they are deleted (translate at C speed: a regex that looked
    for either took ~0.2 s per million prices)."""
    if "-" in joined:
        return True
    left = joined.translate(_ZEROS)
    return not left or left[0] == _SEP or left[-1] == _SEP or _SEP + _SEP in left


def read_text_rows(rows: Iterable[list[str]], row_number: int, ctx: RowContext) -> None:
    """Text-table rows, TEXT_CHUNK at a time: a chunk in which every row is as wide as
    the mapped columns and has a SKU and a plain price, once the file has settled its
    decimal separator (nearly every chunk of a real price list), is converted a column
    at a time by C-level map/zip calls; any other chunk goes through the row loop. Both
    give the same rows: the column path applies the row loop's fast-path rules to every
    value and gives the chunk back to the row loop when one does not fit."""
    _in_chunks(rows, row_number, ctx, _text_columns, _text_rows)


def _in_chunks(
    rows: Iterable[list],
    row_number: int,
    ctx: RowContext,
    by_columns: Callable[[list[list], int, RowContext], bool],
    by_rows: Callable[[list[list], int, RowContext], None],
    *,
    skip_empty: bool = False,
) -> None:
    """Rows TEXT_CHUNK at a time: each chunk ``by_columns`` when it takes it (True),
    else ``by_rows``; row numbers follow the file. Rows wider than Limits.max_columns
    are cut first; the time budget is checked once per chunk. ``skip_empty``: runs of
    EMPTY_RUN or more empty rows (every cell "", as a workbook reader gives the rows
    between two far-apart ones) are counted as skipped in one step and never reach
    the conversion (_data_runs)."""
    rows = iter(rows)
    rn = row_number - 1
    width = ctx.limits.max_columns
    check = ctx.deadline.check
    extra = ctx.extra
    while chunk := list(islice(rows, TEXT_CHUNK)):
        check(Text(m.AT_ROW, row=rn + 1))
        # all(map(any, …)) runs in C and stops at a row's first non-empty cell: about
        # 2 ms per 100k rows of a price list, where every row has a value.
        if not skip_empty or all(map(any, chunk)):
            runs = [(0, len(chunk))]
        else:
            runs = _data_runs(chunk)
            ctx.skipped += len(chunk) - sum(end - start for start, end in runs)
        for start, end in runs:
            part = chunk if end - start == len(chunk) else chunk[start:end]
            first = rn + start
            if max(map(len, part)) > width:
                part = cut_rows(part, first + 1, width, ctx.cuts)
            if extra is not None:
                extra.take(part, first + 1, ctx)
            if not by_columns(part, first, ctx):
                by_rows(part, first + 1, ctx)
        rn += len(chunk)


# Empty rows in a run at least this long are skipped without being looked at one by one;
# shorter runs stay with the rows around them (the row loop skips each, as it always
# has), so that a chunk of rows with a blank line here and there is not cut into pieces.
EMPTY_RUN = 16


def _data_runs(chunk: list[list]) -> list[tuple[int, int]]:
    """The (start, end) slices of ``chunk`` left to convert once every run of EMPTY_RUN
    or more empty rows is taken out; a row is empty when each of its cells is "" (a 0
    or False is a value). The rows are compared and the runs found by C-level calls
    (list.count, list.index): no Python step and no object per empty row, however long
    the run (a million empty rows between two price rows)."""
    empty = list(map(eq, map(list.count, chunk, repeat("")), map(len, chunk)))
    runs: list[tuple[int, int]] = []
    size = len(chunk)
    start = at = 0
    while True:
        try:
            at = empty.index(True, at)
        except ValueError:
            break
        try:
            after = empty.index(False, at)
        except ValueError:
            after = size
        if after - at >= EMPTY_RUN:
            if at > start:
                runs.append((start, at))
            start = after
        at = after
    if start < size:
        runs.append((start, size))
    return runs


def read_plain_rows(
    first: list[list[str]], source: PlainLines, row_number: int, ctx: RowContext
) -> None:
    """A quote-free text table: the rows already read, then each further text of lines
    converted straight from its columns (PlainLines.columns_of) where every line has as
    many fields; any other text goes through read_text_rows. The same rows either way."""
    rows = first + source.leftover
    source.leftover = []
    read_text_rows(rows, row_number, ctx)
    rn = row_number - 1 + len(rows)
    picks = _picks(ctx)
    check = ctx.deadline.check
    extra = ctx.extra
    # The columns the extra values are read from, after the five of _picks.
    more = extra.wanted if extra is not None else []
    for text in source.texts:
        check(Text(m.AT_ROW, row=rn + 1))
        columns = source.columns_of(text, (*picks, *more)) if ctx.num.decimal is not None else None
        if columns is not None and more:
            extra.take_columns(
                dict(zip(more, columns[5:], strict=True)), len(columns[0]), rn + 1, ctx
            )
            columns = columns[:5]
        if columns is not None and _convert_text_columns(len(columns[0]), columns, rn, ctx):
            rn += len(columns[0])
            source.line_num += len(columns[0])
            continue
        rows = source.rows_of(text)
        read_text_rows(rows, rn + 1, ctx)
        rn += len(rows)


def _picks(ctx: RowContext) -> tuple[int, int, int, int, int]:
    """The columns of sku, price, name, currency and quantity; sku's for absent ones."""
    si, ni, pi, ci, qi = ctx.columns
    return (
        si,
        pi,
        ni if ni != ABSENT else si,
        ci if ci != ABSENT else si,
        qi if qi != ABSENT else si,
    )


def _text_columns(chunk: list[list[str]], rn: int, ctx: RowContext) -> bool:
    """Converts a chunk column by column; False (nothing done) when it does not fit."""
    if ctx.num.decimal is None:
        return False
    picks = _picks(ctx)
    if min(map(len, chunk)) <= max(picks):
        return False
    columns = zip(*map(itemgetter(*picks), chunk), strict=True)
    return _convert_text_columns(len(chunk), list(columns), rn, ctx)


# One function, column by column over a whole chunk, its checks inline: turned off, a
# 200k-row quoted CSV (the csv module's path) took 1.76x as long in parse() into a block
# sink (0.53 s against 0.30 s; medians of 5 alternated runs, 2026-12-03).
def _convert_text_columns(count: int, columns: list, row_no: int, ctx: RowContext) -> bool:
    """Converts ``n`` rows given as their sku, price, name, currency and quantity
    columns (_picks); False (nothing done) when one does not fit the fast path."""
    decimal_sep = ctx.num.decimal
    if decimal_sep is None:
        return False
    _, name_col, _, currency_col, qty_col = ctx.columns
    has_name, has_currency, has_qty = name_col != ABSENT, currency_col != ABSENT, qty_col != ABSENT
    skus, prices, names, currencies, quantities = columns
    skus = list(map(str.strip, skus))
    prices = list(map(str.strip, prices))
    if not all(skus) or not all(prices) or max(map(len, skus)) > SKU_MAX_LENGTH:
        return False
    if ctx.nul and _has_nul(skus, names if has_name else (), currencies if has_currency else ()):
        return False  # the row loop tells which rows
    original = _SEP.join(prices)
    other_sep = "." if decimal_sep == "," else ","
    if not original.isascii() or other_sep in original or original.count(_SEP) != count - 1:
        return False
    joined = original.replace(" ", "")
    if decimal_sep == ",":
        joined = joined.replace(",", ".")
    if ctx.positive and _not_positive(joined):
        return False  # the row loop tells which rows
    blocks = ctx.blocks
    values: list[Decimal] | None = None
    if not (blocks and _DECIMAL_TEXTS.fullmatch(joined)):
        # Plain decimal text is exactly what the fast path gives Decimal without error:
        # a block sink takes it as it is. Anything else is tried as the row loop would.
        if not _PLAIN_PRICES.fullmatch(original):
            return False
        try:
            values = list(map(make_decimal, joined.split(_SEP)))
        except DecimalException:
            return False
        if not -LIMIT < min(values) <= max(values) < LIMIT:
            return False
    if ctx.total + count > ctx.limits.max_rows:
        return False  # the row loop raises at the row that is one too many
    if has_qty:
        qcache = ctx.qcache
        qty_texts = list(map(str.strip, quantities))
        # Set arithmetic finds the cells not read yet ("x in list" would compare
        # Decimals with a sentinel, through numbers.Rational's slow isinstance).
        cache = ctx.qtexts if blocks else qcache
        missing = set(qty_texts).difference(cache)
        lookup: dict = cache
        if missing:
            quantity = ctx.quantity
            lookup = dict(cache)
            for qty_text in missing:
                qty = quantity(qty_text) if qty_text else None
                lookup[qty_text] = qty if not blocks else None if qty is None else str(qty)
                if "," not in qty_text and "." not in qty_text and len(cache) < 4096:
                    cache[qty_text] = lookup[qty_text]
        qtys: list | None = list(map(lookup.__getitem__, qty_texts))
    else:
        qtys = None
    currency_list: list[str | None] | None = None
    if has_currency:
        ccache = ctx.ccache
        currency_list = list(map(ccache.get, currencies, repeat(None)))
        if None in currency_list:
            default = ctx.currency
            for i, currency_text in enumerate(currencies):
                if currency_list[i] is None:
                    currency_list[i] = currency = (
                        (normalise_currency(currency_text) or default) if currency_text else default
                    )
                    if currency_problem(currency):
                        return False  # the row loop tells which rows
                    if len(ccache) < 1024:
                        ccache[currency_text] = currency
    ctx.take_columns(
        row_no + 1,
        skus,
        list(map(str.strip, names)) if has_name else None,
        texts=joined.split(_SEP) if values is None else None,
        values=values,
        currencies=currency_list,
        quantities=qtys,
    )
    return True


def _has_nul(*columns: Sequence[str]) -> bool:
    return any(NUL in "".join(column) for column in columns)


# The row loop of text tables, its helpers inlined (NumberReader.read's fast path, the
# caches): on a 200k-row CSV that takes this loop (a row without a price every 500),
# parse() collecting the rows (the preview's path) took 0.61 s inlined and 0.77 s
# calling NumberReader.read (1.15x; medians of 5 alternated runs, 2026-12-03). Into a
# COPY sink such files go through PlainLines' blocks instead.
def _text_rows(rows: Iterable[list[str]], row_number: int, ctx: RowContext) -> None:
    """The row loop for text tables: every cell is a str. Rows as wide as the mapped
    columns (nearly all) take one itemgetter call; absent fields read column sku and
    are blanked."""
    _, name_col, _, currency_col, qty_col = ctx.columns
    has_name, has_currency, has_qty = name_col != ABSENT, currency_col != ABSENT, qty_col != ABSENT
    picks = _picks(ctx)
    pick = itemgetter(*picks)
    width = max(picks) + 1
    out = ctx.rows
    append = out.append
    numbers = ctx.num
    read = numbers.read
    quantity = ctx.quantity
    default_currency = ctx.currency
    max_rows = ctx.limits.max_rows
    qcache = ctx.qcache
    ccache = ctx.ccache
    decimal_sep = numbers.decimal
    other_sep = "." if decimal_sep == "," else ","
    digits, decimal, invalid = _DIGITS, make_decimal, DecimalException
    nul = ctx.nul
    positive = ctx.positive
    row_no = row_number - 1
    total = ctx.total
    for row in rows:
        row_no += 1
        if len(row) >= width:
            sku, price_text, name, currency_text, qty_text = pick(row)
        else:
            sku, price_text, name, currency_text, qty_text = (
                row[i] if i < len(row) else "" for i in picks
            )
        sku = sku.strip()
        price_text = price_text.strip()
        if not price_text or not sku:
            total = _count_incomplete(row, row_no, sku, price_text, ctx, total)
            continue
        total += 1
        if total > max_rows:
            raise ctx.too_many()
        # NumberReader.read's own fast path, inlined: this line runs a million times. A
        # digit must follow a leading "-" ("-NaN1" would read as a NaN).
        price = None
        if (
            decimal_sep
            and price_text.isascii()
            and other_sep not in price_text
            and price_text[-1] in digits
            and (price_text[0] in digits or (price_text[0] == "-" and price_text[1:2] in digits))
        ):
            try:
                price = decimal(
                    price_text.replace(" ", "").replace(",", ".")
                    if decimal_sep == ","
                    else price_text.replace(" ", "")
                )
                currency = None
            except invalid:
                price = None
        if price is None:
            try:
                price, currency = read(price_text)
            except ValueError:
                if ctx.is_repeated_header(sku, price_text) or _skipped_non_item(row, sku, ctx):
                    total -= 1
                    ctx.skipped += 1
                else:
                    ctx.error(row_no, Text(m.PRICE_NOT_A_NUMBER, value=repr(price_text)), sku)
                continue
            decimal_sep = numbers.decimal
            other_sep = "." if decimal_sep == "," else ","
        if not -LIMIT < price < LIMIT:
            ctx.error(
                row_no,
                Text(m.PRICE_OUT_OF_RANGE, value=repr(price_text), digits=WHOLE_DIGITS),
                sku,
            )
            continue
        if positive and price <= 0:
            numbers.pending = False
            ctx.error(row_no, Text(m.PRICE_NOT_POSITIVE, value=repr(price_text)), sku)
            continue
        if has_qty:
            qty_text = qty_text.strip()
            if qty_text:
                qty = qcache.get(qty_text, False)
                if qty is False:
                    qty = quantity(qty_text)
                    if "," not in qty_text and "." not in qty_text and len(qcache) < 4096:
                        qcache[qty_text] = qty
            else:
                qty = None
        else:
            qty_text = qty = None
        if currency is None:
            if has_currency and currency_text:
                currency = ccache.get(currency_text)
                if currency is None:
                    currency = normalise_currency(currency_text) or default_currency
                    problem = currency_problem(currency)
                    if problem:
                        numbers.pending = False
                        ctx.error(row_no, problem, sku)
                        continue
                    if len(ccache) < 1024:
                        ccache[currency_text] = currency
            else:
                currency = default_currency
        name = name.strip() if has_name else ""
        if len(sku) > SKU_MAX_LENGTH or (nul and (NUL in sku or NUL in name)):
            numbers.pending = False
            ctx.error(row_no, sku_problem(sku) or m.NAME_NUL)
            continue
        if numbers.pending:
            ctx.ambiguous.append((len(out), price_text, qty_text))
            numbers.pending = False
        append((row_no, sku, name, price, currency, qty))
        if len(out) >= ctx.flush_at:
            ctx.flush()
    ctx.total = total


def _count_incomplete(
    row: list, row_no: int, sku: str, price: str, ctx: RowContext, total: int
) -> int:
    """A row missing its SKU or its price, for the row loops: skipped (an empty,
    heading, totals or repeated-header row), or counted and failed with the reason.
    Returns the rows counted so far (``total``, the loop's own count); raises
    TooManyRows past the limit."""
    reason = _incomplete_row(row, sku, price, ctx)
    if reason is None:
        ctx.skipped += 1
        return total
    total += 1
    if total > ctx.limits.max_rows:
        raise ctx.too_many()
    ctx.error(row_no, reason, sku)
    return total


def _incomplete_row(row: list, sku: str, price: str, ctx: RowContext) -> str | None:
    """Why a row missing its sku or price is an error, or None when it is an empty,
    heading, totals or repeated-header row (skipped; headings and totals are counted
    in RowContext.headings and .totals)."""
    if not price:
        if not sku:
            _non_item(row, ctx)  # a heading or a note in the name column, or a total
            return None
        kind = _non_item_kind(row, sku)
        if kind is None:
            return m.PRICE_MISSING
        _count_non_item(kind, ctx)
        return None
    try:
        NumberReader("dot").read(price)
    except ValueError:
        _non_item(row, ctx)  # no sku and no number: a note or sub-heading
        return None
    if _is_total(row):
        ctx.totals += 1  # "Итого" in the name column, the sum in the price column
        return None
    return m.SKU_MISSING


# What a totals row starts with ("Итого:", "Всего по разделу", "Total"), in header.norm
# form: the word, then nothing, a number or a word that continues a total ("по", "за",
# "к оплате", "позиций") — so an item called "Всего лишь дрель" is not one.
_TOTAL = re.compile(
    r"(?:итого|итог|всего|total|subtotal|grand total|sum total)"
    r"(?: (?:по|за|к|в|с|на|без|for|of|incl|excl|amount|позиций|наименований|товаров|строк"
    r"|сумма|\d).*)?"
)
# A numbered heading: "1.", "1.1.", "2.3.4", "1)", "IV.", "Раздел 2", "Группа 1.1",
# then words ("1.1. Дрели и перфораторы").
_NUMBERED = re.compile(
    r"(?:(?:\d{1,3}\.)+\d{0,3}\.?|\d{1,3}\)|[IVXLC]{1,6}\.|"
    r"(?i:раздел|подраздел|группа|подгруппа|категория|глава|section|group|category)"
    r"\s*[\w.]*)\s*[^\W\d_]{2}"
)
# An outline number alone ("1.", "1.1", "2.3.1."): a heading's number in its own column.
_OUTLINE = re.compile(r"(?:\d{1,3}\.)+\d{0,3}")
_WORD = re.compile(r"[^\W\d_]{4,}")

HEADING = "heading"
TOTAL = "total"


def _has_letter(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def _cells(row: list) -> list[str]:
    return [t for c in row if (t := c.strip() if isinstance(c, str) else cell_text(c))]


def _is_total(row: list) -> bool:
    """The row's first non-empty cell says it is a total."""
    for c in row:
        text = c.strip() if isinstance(c, str) else cell_text(c)
        if text:
            return bool(_TOTAL.fullmatch(norm(text)))
    return False


def _non_item_kind(row: list, sku: str) -> str | None:
    """HEADING or TOTAL for a row with a sku cell but no price that is a group heading or
    a totals row, None when it is an item without a price. Runs only for rows missing
    their price: never on the hot path."""
    cells = _cells(row)
    if _TOTAL.fullmatch(norm(cells[0] if cells else sku)):
        return TOTAL
    if len(set(cells)) <= 1:
        # Alone on its row (or merged across it and repeated by the export): a title such
        # as "Кабели и провода" or "1.1. Дрели", not a lone code ("A-17").
        if not any(ch.isdigit() for ch in sku) or _NUMBERED.match(sku):
            return HEADING
        if " " in sku and _WORD.search(sku):
            return HEADING  # "Сверла по металлу 1-10 мм"
        return None
    # "1.1." in the sku column and the title beside it, nothing else on the row.
    if len(cells) == 2 and cells[0] == sku and _OUTLINE.fullmatch(sku):
        other = cells[1]
        if not any(ch.isdigit() for ch in other) or _WORD.search(other):
            return HEADING
    return None


def _skipped_non_item(row: list, sku: str, ctx: RowContext) -> bool:
    """Whether a row whose price is not a number is a heading (merged across the row,
    its text repeated in every cell) or a totals row; counts it if so."""
    kind = _non_item_kind(row, sku)
    if kind is None:
        return False
    _count_non_item(kind, ctx)
    return True


def _count_non_item(kind: str, ctx: RowContext) -> None:
    if kind == TOTAL:
        ctx.totals += 1
    else:
        ctx.headings += 1


def _non_item(row: list, ctx: RowContext) -> bool:
    """Counts a row with neither sku nor price that holds some text as a total or a
    heading (False: an empty row)."""
    cells = _cells(row)
    if not any(map(_has_letter, cells)):
        return False
    _count_non_item(TOTAL if _TOTAL.fullmatch(norm(cells[0])) else HEADING, ctx)
    return True


def read_workbook_rows(rows: Iterable[list], row_number: int, ctx: RowContext) -> None:
    """Workbook rows, TEXT_CHUNK at a time: a chunk whose every row has a SKU and a
    numeric price, text or empty names and currencies, numeric or empty quantities
    (nearly every chunk of a real price list) is converted a column at a time; any
    other chunk goes through the row loop. Both give the same rows."""
    _in_chunks(rows, row_number, ctx, _typed_columns, _rows_typed, skip_empty=True)


_NUMBERS = {float, int}  # exact types: a bool is not a price
_NUMBERS_OR_TEXT = {float, int, str}


# One function, column by column over a whole workbook chunk: turned off, a clean
# 100k-row xlsx took 1.20x as long in parse() into a block sink (0.50 s against 0.43 s;
# medians of 5 alternated runs, 2026-12-03).
def _typed_columns(chunk: list[list], row_no: int, ctx: RowContext) -> bool:
    """Converts a workbook chunk column by column, exactly as _rows_typed would; False
    (nothing done) when the chunk holds anything the row loop must judge."""
    _, name_col, _, currency_col, qty_col = ctx.columns
    has_name, has_currency, has_qty = name_col != ABSENT, currency_col != ABSENT, qty_col != ABSENT
    picks = _picks(ctx)
    if min(map(len, chunk)) <= max(picks):
        return False
    blocks = ctx.blocks
    if blocks and ctx.ambiguous and ctx.num.decimal is None:
        return False  # rows held back for an undecided separator must go first
    count = len(chunk)
    skus: Sequence[Any]
    prices: Sequence[Any]
    skus, prices, names, currencies, quantities = zip(*map(itemgetter(*picks), chunk), strict=True)
    if not set(map(type, prices)) <= _NUMBERS or not all(map(math.isfinite, prices)):
        return False
    if not -FLOAT_LIMIT < min(prices) <= max(prices) < FLOAT_LIMIT:
        return False
    if ctx.positive and min(prices) <= 0:
        return False  # the row loop tells which rows
    if set(map(type, skus)) == {str}:
        skus = list(map(str.strip, skus))
    else:
        skus = [cell.strip() if type(cell) is str else cell_text(cell) for cell in skus]
    if not all(skus) or max(map(len, skus)) > SKU_MAX_LENGTH:
        return False
    if has_currency and set(map(type, currencies)) != {str}:
        return False
    if has_qty:
        kinds = set(map(type, quantities))
        if not kinds <= _NUMBERS_OR_TEXT:
            return False
        if str in kinds and any(
            qty_cell.strip() for qty_cell in quantities if type(qty_cell) is str
        ):
            return False  # quantity text is read by the number reader, row by row
    if ctx.total + count > ctx.limits.max_rows:
        return False  # the row loop raises at the row that is one too many
    # repr is the shortest text that reads back as the same number, the row loop's
    # value, though spelt "12345.0" or "1e-05": a block sink takes it as it is (COPY
    # reads it), row tuples get the row loop's spelling.
    texts = list(map(repr, prices))
    if not blocks:
        texts = _whole_numbers_bare(texts, prices)
    if has_qty:
        qtys: list | None = _typed_quantities(quantities, ctx)
    else:
        qtys = None
    currency_list: list[str | None] | None = None
    if has_currency:
        default = ctx.currency
        found = {
            currency_cell: normalise_currency(text) if (text := currency_cell.strip()) else default
            for currency_cell in set(currencies)
        }
        if any(map(currency_problem, found.values())):
            return False  # the row loop tells which rows
        currency_list = list(map(found.__getitem__, currencies))
    name_list: list[str] | None = None
    if has_name:
        if set(map(type, names)) == {str}:
            name_list = list(map(str.strip, names))
        else:
            name_list = [cell.strip() if type(cell) is str else cell_text(cell) for cell in names]
    if ctx.nul and _has_nul(skus, name_list or ()):
        return False
    ctx.take_columns(
        row_no + 1, skus, name_list, texts=texts, currencies=currency_list, quantities=qtys
    )
    return True


def _whole_numbers_bare(texts: list[str], prices: Sequence[float | int]) -> list[str]:
    """The row loop's price texts from ``texts`` (the reprs of ``prices``, all finite and
    below FLOAT_LIMIT): Decimal(int(p)) for whole numbers, so "12345.0" becomes "12345".
    Below 1e16 a float's repr ends in ".0" exactly when it is whole: the suffix is cut
    from the joined texts in one pass. A zero (perhaps "-0.0", which the row loop
    reads as 0) takes the loop."""
    if 0 in prices:
        return [str(int(p)) if isinstance(p, int) or p.is_integer() else repr(p) for p in prices]
    whole = ".0" + _SEP
    joined = _SEP.join(texts) + _SEP
    if whole not in joined:
        return texts
    return joined.replace(whole, _SEP).split(_SEP)[:-1]


def _typed_quantities(quantities: Sequence[Any], ctx: RowContext) -> list:
    """A chunk's quantity cells (numbers, or text that is blank) as the row loop reads
    them: Decimal or None, or their text for a block sink. Each distinct cell is read
    once per file: RowContext keeps what was read, up to 4096 values."""
    blocks = ctx.blocks
    cache = ctx.typed_qcache
    # Set arithmetic finds the cells not read yet (the cells are floats, ints and str:
    # no bool, which would equal 1 and 0).
    missing = set(quantities).difference(cache)
    lookup = cache
    if missing:
        if len(cache) + len(missing) > 4096:
            lookup = dict(cache)  # read them for this chunk only
        for q in missing:
            qty = None if type(q) is str else _typed_quantity(q)
            lookup[q] = qty if not blocks or qty is None else str(qty)
    return list(map(lookup.__getitem__, quantities))


def _typed_quantity(q: float | int) -> Decimal | None:
    """A workbook's numeric quantity cell; None when out of range (numbers.LIMIT)."""
    if not -FLOAT_LIMIT < q < FLOAT_LIMIT:
        return None
    return float_to_decimal(q) if type(q) is float else Decimal(q)


# The row loop of workbooks, for the chunks _typed_columns leaves (a gap, a price as
# text): the text loop's shape, each of a cell's types read inline. Inlining is not what
# keeps it long: the price's conversion moved into a helper measured the same (0.98x,
# 100k-row xlsx with a gap every 500 rows, into a block sink, 2026-12-03); its checks
# stay in one place because their order is the order a row's errors are reported in.
def _rows_typed(rows: Iterable[list], row_number: int, ctx: RowContext) -> None:
    """The loop for workbooks: cells are str, float, int, bool, date/time or ""."""
    sku_col, name_col, price_col, currency_col, qty_col = ctx.columns
    out = ctx.rows
    append = out.append
    numbers = ctx.num
    read = numbers.read
    default_currency = ctx.currency
    max_rows = ctx.limits.max_rows
    qcache: dict[float, Decimal | None] = {}
    ccache: dict[object, str] = {}
    price_cell: Any  # a workbook cell: str, float, int, bool, date/time or ""
    qty_cell: Any
    nul = ctx.nul
    positive = ctx.positive
    row_no = row_number - 1
    total = ctx.total
    for row in rows:
        row_no += 1
        width = len(row)
        cell = row[sku_col] if sku_col < width else ""
        sku = cell.strip() if type(cell) is str else cell_text(cell)
        price_cell = row[price_col] if price_col < width else ""
        price_type = type(price_cell)
        price_text = price_cell.strip() if price_type is str else "x"
        if not sku or not price_text:
            texts = [cell_text(cell) for cell in row]
            total = _count_incomplete(texts, row_no, sku, cell_text(price_cell), ctx, total)
            continue
        total += 1
        if total > max_rows:
            raise ctx.too_many()
        currency = None
        if price_type is float:
            # repr is the shortest text that round-trips: 10.1 stays 10.1.
            price = (
                Decimal(int(price_cell)) if price_cell.is_integer() else Decimal(repr(price_cell))
            )
        elif price_type is int:
            price = Decimal(price_cell)
        elif price_type is str:
            try:
                price, currency = read(price_text)
            except ValueError:
                if ctx.is_repeated_header(sku, price_text) or _skipped_non_item(row, sku, ctx):
                    total -= 1
                    ctx.skipped += 1
                else:
                    ctx.error(row_no, Text(m.PRICE_NOT_A_NUMBER, value=repr(price_text)), sku)
                continue
        else:
            ctx.error(row_no, Text(m.PRICE_NOT_A_NUMBER, value=repr(cell_text(price_cell))), sku)
            continue
        if not -LIMIT < price < LIMIT:
            ctx.error(
                row_no,
                Text(m.PRICE_OUT_OF_RANGE, value=repr(cell_text(price_cell)), digits=WHOLE_DIGITS),
                sku,
            )
            continue
        if positive and price <= 0:
            numbers.pending = False
            ctx.error(row_no, Text(m.PRICE_NOT_POSITIVE, value=repr(cell_text(price_cell))), sku)
            continue
        qty_cell = row[qty_col] if qty_col < width else ""
        qty_type = type(qty_cell)
        if qty_type is float:
            qty = qcache.get(qty_cell, False)
            if qty is False:
                qty = _typed_quantity(qty_cell)
                if len(qcache) < 4096:
                    qcache[qty_cell] = qty
        elif qty_type is int:
            qty = _typed_quantity(qty_cell)
        elif qty_type is str and qty_cell.strip():
            qty = ctx.quantity(qty_cell.strip())
        else:
            qty = None
        if currency is None:
            currency_cell = row[currency_col] if currency_col < width else ""
            currency = ccache.get(currency_cell)
            if currency is None:
                text = (
                    currency_cell.strip()
                    if type(currency_cell) is str
                    else cell_text(currency_cell)
                )
                currency = normalise_currency(text) if text else default_currency
                problem = currency_problem(currency)
                if problem:
                    numbers.pending = False
                    ctx.error(row_no, problem, sku)
                    continue
                if len(ccache) < 1024:
                    ccache[currency_cell] = currency
        cell = row[name_col] if name_col < width else ""
        name = cell.strip() if type(cell) is str else cell_text(cell)
        if len(sku) > SKU_MAX_LENGTH or (nul and (NUL in sku or NUL in name)):
            numbers.pending = False
            ctx.error(row_no, sku_problem(sku) or m.NAME_NUL)
            continue
        if numbers.pending:
            ctx.ambiguous.append(
                (
                    len(out),
                    price_text if price_type is str else None,
                    qty_cell.strip() if type(qty_cell) is str else None,
                )
            )
            numbers.pending = False
        append((row_no, sku, name, price, currency, qty))
        if len(out) >= ctx.flush_at:
            ctx.flush()
    ctx.total = total
