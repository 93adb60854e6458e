"""Workbook rows read a column at a time give exactly the rows the row loop gives."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pricefeed.parsing import ParseOptions, parse, rows

from .alike import assert_read_alike
from .builders import xlsx
from .test_sink import _BlockSink

HEADER = ["Артикул", "Наименование", "Цена", "Остаток", "Валюта"]
PLAIN = [
    [f"B-{i}", f"Товар {i}", [10.1, 12345.0, 7, -3.25, 0.1 + 0.2, 1e-05][i % 6], i % 4, "руб."]
    for i in range(24)
]
ODD = [
    [101, 5.5, 99.9, 2.5, "$"],  # a numeric SKU and name
    ["A-2", "Розетка", "1 234,50", None, "RUB"],  # a price as text
    ["A-3", "Щит", True, 1, "EUR"],  # a boolean is not a price
    [None, "Без артикула", 15, 1, "RUB"],  # no SKU
    ["A-4", "Лампа", 12.0, "5 шт.", ""],  # quantity as text
    ["Кабели и провода", None, None, None, None],  # a section title
    ["A-5", "Провод", 3.0, 2.0, 5],  # a number as currency
    ["A-6", None, 8, None, None],
    ["A-7", "Огромная цена", 1e15, 1, "RUB"],  # out of numeric(18,4)'s range
    ["A-8", "Огромный остаток", 5, 10**15, "RUB"],  # a quantity out of range: none
    ["A-9", "Минус ноль", -0.0, -0.0, "RUB"],  # read as 0, in a chunk of its own or not
    ["A-10", "Целая", 250.0, 2.0, "RUB"],  # "250", and a quantity read before
]


def _by_rows(data: bytes, options: ParseOptions, monkeypatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(rows, "_typed_columns", lambda *args: False)
        return parse(data, options)


@pytest.mark.parametrize("chunk", [1, 3, 5, 4096])
def test_column_path_gives_the_row_loops_rows_errors_and_counts(chunk, monkeypatch):
    data = xlsx([["Прайс-лист"], HEADER, *PLAIN, *ODD, *PLAIN, *ODD[::-1]])
    options = ParseOptions(default_currency="KZT")
    by_rows = _by_rows(data, options, monkeypatch)
    monkeypatch.setattr(rows, "TEXT_CHUNK", chunk)
    by_columns = parse(data, options)
    assert_read_alike(by_columns, by_rows)
    # Whole numbers lose their ".0", others keep what was typed.
    prices = {row[1]: row[3] for row in by_columns.rows}
    assert (prices["B-0"], prices["B-1"], prices["B-5"]) == (
        Decimal("10.1"),
        Decimal("12345"),
        Decimal("0.00001"),
    )


@pytest.mark.parametrize("chunk", [2, 3])
def test_a_block_sink_gets_the_rows_of_a_workbook_parse_gives_without_a_sink(chunk, monkeypatch):
    data = xlsx([HEADER, *PLAIN, *ODD, *PLAIN])
    options = ParseOptions(default_currency="KZT")
    plain = _by_rows(data, options, monkeypatch)
    monkeypatch.setattr(rows, "TEXT_CHUNK", chunk)
    sink = _BlockSink()
    result = parse(data, options, sink=sink)
    assert sink.blocks
    assert sink.rows == plain.rows
    assert result.errors == plain.errors
    assert (result.rows_ok, result.rows_total) == (plain.rows_ok, plain.rows_total)


def test_a_workbook_with_only_sku_and_price_columns(monkeypatch):
    data = xlsx([["Артикул", "Цена"], *[[f"A-{i}", i + 0.5] for i in range(10)]])
    options = ParseOptions(default_currency="RUB")
    by_rows = _by_rows(data, options, monkeypatch)
    monkeypatch.setattr(rows, "TEXT_CHUNK", 3)
    by_columns = parse(data, options)
    assert by_columns.rows == by_rows.rows
    assert by_columns.rows[-1] == (11, "A-9", "", Decimal("9.5"), "RUB", None)


def test_numbers_out_of_the_stored_range_are_a_row_error_or_no_quantity():
    data = xlsx([HEADER, ["A-1", "x", 1e14, 1, ""], ["A-2", "y", 99999999999999.5, 1e16, ""]])
    parsed = parse(data)
    assert parsed.errors == [
        (2, "price '100000000000000' is out of range (at most 14 digits before the decimal point)")
    ]
    assert [(row[1], row[3], row[5]) for row in parsed.rows] == [
        ("A-2", Decimal("99999999999999.5"), None)
    ]
