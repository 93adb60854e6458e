"""A line's values beyond its SKU, name, price, currency and quantity, read a chunk at a
time beside the row conversion of rows.py: brand, article, barcodes, unit, pack size,
minimum order, more price columns, stock per warehouse, the stock cell's text, and the
category path of the group heading rows above it.

A chunk's values are read before its rows are converted, so that a sink has them when
its rows come. A file with none of these columns, no heading row and no stock written
as text costs one look at the chunk's price column (and, with a quantity column, at its
distinct cells)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from operator import itemgetter
from typing import Any

from core.storedtext import Text

from . import messages as m
from .headers import norm
from .numbers import LIMIT, NumberReader, currency_in_text, float_to_decimal, normalise_currency
from .rows import _TOTAL as TOTAL_ROW
from .rows import ABSENT, HEADING, NUL, RowContext, _cells, _has_letter, _non_item_kind, cell_text
from .types import TEXT_MAX_LENGTH, UNIT_MAX_LENGTH, ExtraColumns
from .values import CategoryPath, read_barcodes, read_stock

_NUMBERS = {float, int}
_CACHE = 4096  # distinct cells remembered per column


class ExtraPlan:
    """Where a file's extra values are (0-based columns, ABSENT for none) and what was
    read so far (the category path, caches of distinct cells)."""

    def __init__(
        self,
        *,
        columns: dict[str, int],
        prices: Sequence[tuple[str, int, str]],
        stocks: Sequence[tuple[str, int]],
        core: Sequence[int],
        num: NumberReader,
        default_currency: str,
    ) -> None:
        self.columns = columns  # EXTRA_FIELDS -> column
        self.prices = list(prices)  # (price type code, column, fixed currency or "")
        self.stocks = list(stocks)  # (warehouse, column)
        self.sku_col, self.name_col, self.price_col, self.currency_col, self.qty_col = core
        self.num = num
        self.default_currency = default_currency
        self.category = CategoryPath()
        self._texts: dict[int, dict[object, str]] = {}
        self._barcodes: dict[object, tuple[list[str], list[str]]] = {}
        self._numbers: dict[object, Decimal | None] = {}
        self._stock: dict[object, tuple[str | None, str, str]] = {}
        # Stock cells known to be plain figures (or empty): most files have no other.
        self._plain_stock: set[object] = set()

    @property
    def wanted(self) -> list[int]:
        """The columns read here (besides the price column, for headings)."""
        cols = {*self.columns.values(), *(col for _, col, _ in self.prices)}
        cols.update(col for _, col in self.stocks)
        if self.prices and self.currency_col != ABSENT:
            cols.add(self.currency_col)
        if self.qty_col != ABSENT:
            cols.add(self.qty_col)
        return sorted(cols)

    # -- the hook rows.py calls --------------------------------------------------------

    def take(self, chunk: list[list], first_row: int, ctx: RowContext) -> None:
        """Reads a chunk's values and hands them on (ctx.take_extras)."""
        values = self.read(chunk, first_row, ctx)
        if values:
            ctx.take_extras(ExtraColumns(first_row, len(chunk), values))

    def take_columns(
        self, columns: dict[int, list], count: int, first_row: int, ctx: RowContext
    ) -> None:
        """The values of rows given as their columns (``wanted``: the quote-free path's
        columns, a text without a heading row; one with one goes back to the row loop,
        which reads it again with its headings)."""
        values: dict[str, list] = {}
        if self.category.text:
            values["category"] = [self.category.text] * count
        self._read(columns.__getitem__, count, first_row, ctx, values)
        if values:
            ctx.take_extras(ExtraColumns(first_row, count, values))

    # -- reading -----------------------------------------------------------------------

    def read(self, chunk: list[list], first_row: int, ctx: RowContext) -> dict[str, list]:
        values: dict[str, list] = {}
        self._categories(chunk, values)
        self._read(lambda col: _column(chunk, col), len(chunk), first_row, ctx, values)
        return values

    def _read(
        self,
        column: Callable[[int], list],
        count: int,
        first_row: int,
        ctx: RowContext,
        values: dict[str, list],
    ) -> None:
        for field, col in self.columns.items():
            cells = column(col)
            if field in ("article", "brand"):
                values[field] = self._text(cells, TEXT_MAX_LENGTH, col, ctx.nul)
            elif field == "unit":
                values[field] = self._text(cells, UNIT_MAX_LENGTH, col, ctx.nul)
            elif field == "barcode":
                self._read_barcodes(cells, first_row, values, ctx)
            else:  # pack, min_order
                values[field] = [self._number(c) for c in cells]
        if self.qty_col != ABSENT:
            self._stock_texts(column(self.qty_col), values)
        if self.prices:
            values["prices"] = self._prices(column, count)
        if self.stocks:
            values["stocks"] = self._stocks(column, count)

    def _categories(self, chunk: list[list], values: dict[str, list]) -> None:
        cells = _column(chunk, self.price_col)
        kinds = set(map(type, cells))
        if kinds <= _NUMBERS:
            heads: list[int] = []
        else:
            joined = "".join(c for c in cells if type(c) is str)
            if all(cells) and joined.lower() == joined.upper():
                heads = []  # every price is there and holds no letter
            else:
                heads = [
                    i
                    for i, c in enumerate(cells)
                    if type(c) not in _NUMBERS
                    and (type(c) is not str or not c.strip() or c.lower() != c.upper())
                    and self._is_heading(chunk[i])
                ]
        category = self.category
        if not heads and not category.text:
            return
        out: list[str] = []
        start = 0
        for i in heads:
            out.extend([category.text] * (i - start))
            category.heading(_cells(chunk[i]))
            out.append(category.text)
            start = i + 1
        out.extend([category.text] * (len(chunk) - start))
        values["category"] = out

    def _is_heading(self, row: list) -> bool:
        """A group heading row: some text, at most two distinct cells, no price that is
        a number (the rules rows.py counts headings by)."""
        cells = _cells(row)
        if not cells or len(set(cells)) > 2 or not any(map(_has_letter, cells)):
            return False
        width = len(row)
        price = cell_text(row[self.price_col]) if self.price_col < width else ""
        if price:
            try:
                NumberReader("dot").read(price)
            except ValueError:
                pass
            else:
                return False
        sku = cell_text(row[self.sku_col]) if self.sku_col < width else ""
        if sku:
            return _non_item_kind(row, sku) == HEADING
        return not TOTAL_ROW.fullmatch(norm(cells[0]))

    def _text(self, cells: list, limit: int, col: int, nul: bool) -> list[str]:
        if set(map(type, cells)) == {str}:
            # A column of text at C speed (a text table's, nearly always).
            texts = list(map(str.strip, cells))
            if max(map(len, texts)) > limit:
                texts = [t[:limit] for t in texts]
            if nul and NUL in "".join(texts):
                texts = [t.replace(NUL, "") for t in texts]
            return texts
        cache = self._texts.setdefault(col, {})
        out = []
        for c in cells:
            text = cache.get(c)
            if text is None:
                text = (c.strip() if type(c) is str else cell_text(c))[:limit]
                if nul and NUL in text:
                    text = text.replace(NUL, "")
                if len(cache) < _CACHE:
                    cache[c] = text
            out.append(text)
        return out

    def _read_barcodes(
        self, cells: list, first_row: int, values: dict[str, list], ctx: RowContext
    ) -> None:
        cache = self._barcodes
        valid: list[list[str]] = []
        invalid: list[list[str]] = []
        for i, c in enumerate(cells):
            found = cache.get(c)
            if found is None:
                text = c if type(c) is str else cell_text(c)
                found = read_barcodes(text.replace(NUL, "")) if text else ([], [])
                if len(cache) < _CACHE:
                    cache[c] = found
            valid.append(found[0])
            invalid.append(found[1])
            if found[1]:
                ctx.warn(first_row + i, Text(m.BARCODE_INVALID, codes=", ".join(found[1])))
        values["barcodes"] = valid
        if any(invalid):
            values["barcodes_invalid"] = invalid

    def _number(self, c: Any) -> Decimal | None:
        value = self._numbers.get(c, False)
        if value is False:
            if type(c) in _NUMBERS:
                value = (
                    float_to_decimal(c)
                    if type(c) is float and math.isfinite(c) and -LIMIT < c < LIMIT
                    else Decimal(c)
                    if type(c) is int and -LIMIT < c < LIMIT
                    else None
                )
            elif type(c) is str and c.strip():
                value = self.num.quantity(c.strip())
            else:
                value = None
            if len(self._numbers) < _CACHE:
                self._numbers[c] = value
        return value  # type: ignore[return-value]

    def _stock_of(self, c: Any) -> tuple[str | None, str, str]:
        """A stock cell as (figure as decimal text or None, kind, text kept)."""
        found = self._stock.get(c)
        if found is None:
            if type(c) in _NUMBERS:
                figure = self._number(c)
                found = (None if figure is None else str(figure), "", "")
            else:
                text = (c if type(c) is str else cell_text(c)).strip()
                value, kind = read_stock(text, self.num)
                plain = not kind and value is not None
                found = (
                    None if value is None else str(value),
                    kind,
                    "" if plain else text.replace(NUL, "")[:TEXT_MAX_LENGTH],
                )
            if len(self._stock) < _CACHE:
                self._stock[c] = found
        return found

    def _stock_texts(self, cells: list, values: dict[str, list]) -> None:
        """stock_text and stock_kind for the cells that are not plain figures."""
        plain = self._plain_stock
        unknown = set(cells).difference(plain)
        if not unknown:
            return
        found = False
        for c in unknown:
            if type(c) is str and c.strip() and self._stock_of(c)[2]:
                found = True
            elif len(plain) < _CACHE:
                plain.add(c)
        if not found:
            return
        stock = self._stock_of
        kinds, kept = [], []
        for c in cells:
            if type(c) is str and c.strip():
                _, kind, text = stock(c)
            else:
                kind, text = "", ""
            kinds.append(kind)
            kept.append(text)
        values["stock_kind"] = kinds
        values["stock_text"] = kept

    def _prices(self, column: Callable[[int], list], count: int) -> list[dict | None]:
        read = self.num.read
        row_currencies = column(self.currency_col) if self.currency_col != ABSENT else None
        out: list[dict | None] = [None] * count
        for code, col, fixed in self.prices:
            for r, c in enumerate(column(col)):
                currency = None
                if type(c) in _NUMBERS:
                    if not (math.isfinite(c) and -LIMIT < c < LIMIT):
                        continue
                    value = float_to_decimal(c) if type(c) is float else Decimal(c)
                elif type(c) is str and c.strip():
                    try:
                        value, currency = read(c.strip())
                    except ValueError:
                        continue
                    if not -LIMIT < value < LIMIT:
                        continue
                else:
                    continue
                if not currency:
                    currency = fixed
                if not currency and row_currencies is not None:
                    cell = row_currencies[r]
                    text = cell.strip() if type(cell) is str else cell_text(cell)
                    currency = normalise_currency(text) if text else ""
                found = out[r]
                if found is None:
                    found = out[r] = {}
                found[code] = {
                    "price": str(value),
                    # JSON in PostgreSQL holds no NUL (\u0000).
                    "currency": (currency or self.default_currency).replace(NUL, "")[:10],
                }
        return out

    def _stocks(self, column: Callable[[int], list], count: int) -> list[dict | None]:
        out: list[dict | None] = [None] * count
        stock = self._stock_of
        for warehouse, col in self.stocks:
            for r, c in enumerate(column(col)):
                if c == "" or c is None:
                    continue
                figure, kind, text = stock(c)
                if figure is None and not kind and not text:
                    continue
                entry: dict[str, str | None] = {"quantity": figure}
                if kind:
                    entry["kind"] = kind
                if text:
                    entry["text"] = text
                found = out[r]
                if found is None:
                    found = out[r] = {}
                found[warehouse] = entry
        return out


def _column(chunk: list[list], col: int) -> list:
    if chunk and min(map(len, chunk)) > col:
        return list(map(itemgetter(col), chunk))
    return [row[col] if col < len(row) else "" for row in chunk]


def header_currency(text: str) -> str:
    """The currency a price column's header names ("РРЦ, $" -> "USD"), or ""."""
    return currency_in_text(text) or ""
