"""Every value is checked against what the price table takes (types.SKU_MAX_LENGTH and
the others): one that does not fit makes its row a row error with the reason, and the
rest of the file is read. Checked on every conversion path: the row loops, the column
paths with and without a RowBlock sink, text tables and workbooks."""

from __future__ import annotations

from decimal import Decimal

import pytest

from devkit.hostile_files import xls_with_cells
from pricefeed.parsing import (
    CURRENCY_MAX_LENGTH,
    SKU_MAX_LENGTH,
    parse,
)

from . import builders as b

HEAD = "Артикул;Наименование;Цена;Валюта;Остаток\n"
# Enough ordinary rows around the bad one that a chunk goes down the column paths first.
GOOD = "".join(f"A-{i};Кабель {i};{i},50;RUB;{i}\n" for i in range(1, 5000))


class Blocks:
    """A sink that takes RowBlocks, as the import's writer does: collects (sku, price)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def __call__(self, rows: list[tuple]) -> None:
        self.rows.extend((r[1], str(r[3])) for r in rows)

    def take_block(self, block) -> None:
        self.rows.extend(zip(block.skus, block.prices, strict=True))


def read(text: str | bytes, sink: str):
    data = text.encode() if isinstance(text, str) else text
    if sink == "blocks":
        blocks = Blocks()
        return parse(data, sink=blocks), blocks.rows
    result = parse(data)
    return result, [(r[1], str(r[3])) for r in result.rows]


SINKS = pytest.mark.parametrize("sink", ["rows", "blocks"])


def errors_of(text: str | bytes, sink: str) -> tuple[list[tuple[int, str]], list]:
    result, rows = read(text, sink)
    assert result.rows_ok == len(rows)
    assert result.rows_total == result.rows_ok + len(result.errors)
    return result.errors, rows


@SINKS
def test_a_nul_past_the_first_64_kb_is_a_row_error(sink):
    tail = "Z-1;Плохой\x00товар;5,00;RUB;1\nZ-2;Хороший;5,00;RUB;1\nZ\x00-3;x;1,00;RUB;1\n"
    text = HEAD + GOOD + tail
    assert len(text.encode()) > 65536
    errors, rows = errors_of(text, sink)
    assert errors == [
        (5001, "name contains a NUL character"),
        (5003, "sku contains a NUL character"),
    ]
    assert ("Z-2", "5.00") in rows
    assert not any("\x00" in sku for sku, _ in rows)


def test_a_nul_in_a_quoted_table_is_a_row_error():
    text = '"Артикул";Наименование;Цена\n' + "A-1;x;1\n" * 10_000 + 'A-2;"a\x00b";2\n'
    result = parse(text.encode())
    assert result.errors == [(10_002, "name contains a NUL character")]


@SINKS
def test_an_sku_longer_than_the_column_is_a_row_error(sink):
    ok, long = "S" * SKU_MAX_LENGTH, "L" * (SKU_MAX_LENGTH + 1)
    text = HEAD + GOOD + f"{ok};x;1,00;RUB;1\n{long};x;2,00;RUB;1\n"
    errors, rows = errors_of(text, sink)
    assert errors == [(5002, "sku is longer than 255 characters (256)")]
    assert (ok, "1.00") in rows


@SINKS
def test_a_currency_longer_than_the_column_is_a_row_error(sink):
    ok = "X" * CURRENCY_MAX_LENGTH
    text = HEAD + GOOD + f"Y-1;x;1,00;{ok};1\nY-2;x;1,00;Российский рубль;1\n"
    errors, rows = errors_of(text, sink)
    assert errors == [(5002, "currency 'Российский рубль' is longer than 10 characters")]
    assert ("Y-1", "1.00") in rows


@SINKS
def test_prices_that_would_overflow_numeric_18_4_are_row_errors(sink):
    """PostgreSQL rounds to 4 places first: 99999999999999.99995 becomes 10**14."""
    text = (
        HEAD
        + GOOD
        + (
            "Y-1;x;99999999999999,9999;RUB;1\n"
            "Y-2;x;99999999999999,99995;RUB;1\n"
            "Y-3;x;100000000000000;RUB;1\n"
            "Y-4;x;123456789012345678901234567890;RUB;1\n"
        )
    )
    errors, rows = errors_of(text, sink)
    out_of_range = "is out of range (at most 14 digits before the decimal point)"
    assert errors == [
        (5002, f"price '99999999999999,99995' {out_of_range}"),
        (5003, f"price '100000000000000' {out_of_range}"),
        (5004, f"price '123456789012345678901234567890' {out_of_range}"),
    ]
    assert ("Y-1", "99999999999999.9999") in rows


@SINKS
def test_text_that_decimal_reads_as_nan_or_with_underscores_is_not_a_number(sink):
    text = HEAD + GOOD + "Y-1;x;-NaN1;RUB;1\nY-2;x;1_000;RUB;1\nY-3;x;5,00;RUB;-sNaN2\n"
    errors, rows = errors_of(text, sink)
    assert errors == [
        (5001, "price '-NaN1' is not a number"),
        (5002, "price '1_000' is not a number"),
    ]
    assert ("Y-3", "5.00") in rows


def test_exponents_give_values_postgresql_reads():
    text = HEAD + GOOD + "Y-1;x;1e-99999;RUB;1e99999\nY-2;x;2,5E+3;RUB;1\n"
    result = parse(text.encode())
    y1, y2 = result.rows[-2:]
    assert (y1[3], y1[5]) == (Decimal(0), None)  # underflows to 0; no quantity
    assert y1[3].as_tuple().exponent >= -16383  # numeric's largest scale
    assert y2[3] == Decimal(2500)


def test_quantities_out_of_range_are_no_quantity():
    text = HEAD + GOOD + "Y-1;x;1,00;RUB;99999999999999,99995\nY-2;x;1,00;RUB;-NaN1\n"
    result = parse(text.encode())
    assert [r[5] for r in result.rows[-2:]] == [None, None]
    assert result.rows_failed == 0


def test_xlsx_escaped_nul_in_a_cell_is_a_row_error():
    """calamine decodes "_x0000_" in a cell's text to a NUL character."""
    sheet = b.sheet_xml(
        [
            ["Артикул", "Наименование", "Цена"],
            ["A-1", "a_x0000_b", 1],
            ["A_x0000_2", "ok", 2],
            ["A-3", "ok", 3],
        ]
    )
    result = parse(b.handmade_xlsx(sheet))
    assert result.errors == [
        (2, "name contains a NUL character"),
        (3, "sku contains a NUL character"),
    ]
    assert [r[1] for r in result.rows] == ["A-3"]


def test_workbook_values_are_checked_on_the_column_path_too():
    rows = [["Артикул", "Наименование", "Цена", "Валюта"]]
    rows += [[f"A-{i}", f"Кабель {i}", i + 0.5, "RUB"] for i in range(1, 3000)]
    rows += [
        ["L" * 300, "x", 1, "RUB"],
        ["Y-1", "x", 2, "Российский рубль"],
        ["Y-2", "x", 1e15, "RUB"],
    ]
    blocks = Blocks()
    result = parse(b.xlsx(rows), sink=blocks)
    assert [e[0] for e in result.errors] == [3001, 3002, 3003]
    assert result.errors[0][1] == "sku is longer than 255 characters (300)"
    assert result.rows_ok == 2999 == len(blocks.rows)


def test_xls_strings_with_nul_are_row_errors():
    cells: list[tuple[int, int, str | float]] = [(0, 0, "Артикул"), (0, 1, "Цена")]
    cells += [(1, 0, "A\x001"), (1, 1, 1.0), (2, 0, "A-2"), (2, 1, 2.0)]
    result = parse(xls_with_cells(cells))
    assert result.errors == [(2, "sku contains a NUL character")]
    assert result.rows_ok == 1
