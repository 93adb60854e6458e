"""parse(sink=...): rows handed over in chunks while the file is read, as without a sink."""

from __future__ import annotations

import pytest

from pricefeed.parsing import Limits, ParseOptions, TooManyRows, parse, rows

from . import builders as b
from .alike import assert_read_alike


@pytest.fixture
def sink_chunks_of_three(monkeypatch):
    monkeypatch.setattr(rows, "SINK_CHUNK", 3)


def _collect(data: bytes, options: ParseOptions | None = None, limits: Limits | None = None):
    chunks: list[list] = []
    result = parse(data, options, limits, sink=lambda rows: chunks.append(list(rows)))
    return result, chunks


def test_rows_reach_the_sink_in_file_order_and_are_not_kept(sink_chunks_of_three):
    text = "Артикул;Цена\n" + "".join(f"A-{i};{i},50\n" for i in range(10))
    data = text.encode("cp1251")
    plain = parse(data)
    result, chunks = _collect(data)
    assert [row for chunk in chunks for row in chunk] == plain.rows
    assert max(len(chunk) for chunk in chunks) <= 4
    assert result.rows == []
    assert (result.rows_ok, result.rows_failed, result.rows_total) == (10, 0, 10)


def test_undecided_numbers_are_held_back_until_the_file_decides(sink_chunks_of_three):
    # "1,234" is 1.234 or 1234 until "1 234,50" shows that ',' is the decimal separator.
    rows = "".join(f"A-{i};1,234\n" for i in range(7)) + "B-1;1 234,50\nB-2;1,234\n"
    data = ("Артикул;Цена\n" + rows).encode("cp1251")
    result, chunks = _collect(data)
    handed = [row for chunk in chunks for row in chunk]
    assert handed == parse(data).rows
    assert {str(row[3]) for row in handed if row[1].startswith("A-")} == {"1.234"}
    assert result.rows_ok == 9


def test_numbers_never_decided_are_read_as_without_a_sink(sink_chunks_of_three):
    data = ("Артикул;Цена\n" + "".join(f"A-{i};1.234\n" for i in range(8))).encode()
    _, chunks = _collect(data)
    assert [row for chunk in chunks for row in chunk] == parse(data).rows


def test_workbook_rows_reach_the_sink_too(sink_chunks_of_three):
    data = b.xlsx([["Артикул", "Цена"], *[[f"A-{i}", i + 0.5] for i in range(8)], ["A-x", "?"]])
    plain = parse(data)
    result, chunks = _collect(data)
    assert [row for chunk in chunks for row in chunk] == plain.rows
    assert (result.rows_ok, result.rows_failed) == (8, 1)
    assert result.errors == plain.errors


def test_a_late_non_utf8_line_is_read_as_cyrillic_before_any_row_is_handed_over():
    # An English head of more than 64 KB, then a cp1251 line.
    head = "SKU;Name;Price\n" + "".join(f"A-{i};Item number {i};1.50\n" for i in range(3000))
    data = head.encode() + "Z-1;Кабель;2.50\n".encode("cp1251")
    result, chunks = _collect(data)
    handed = [row for chunk in chunks for row in chunk]
    assert result.encoding == "cp1251"
    assert handed[-1][2] == "Кабель"
    assert len(handed) == 3001


def test_rows_handed_over_before_a_refusal_are_the_callers_to_discard(sink_chunks_of_three):
    data = ("Артикул;Цена\n" + "".join(f"A-{i};{i}.5\n" for i in range(20))).encode()
    chunks: list[list] = []
    with pytest.raises(TooManyRows):
        parse(data, limits=Limits(max_rows=10), sink=lambda rows: chunks.append(list(rows)))
    assert chunks  # the caller (the import service) rolls them back


class _BlockSink:
    """Takes row tuples and RowBlocks, as the import service's writer does."""

    def __init__(self) -> None:
        self.rows: list = []
        self.blocks = 0

    def __call__(self, rows) -> None:
        self.rows.extend(rows)

    def take_block(self, block) -> None:
        self.blocks += 1
        self.rows.extend(block.rows())


@pytest.mark.parametrize("number_format", ["auto", "comma", "dot"])
def test_a_block_sink_gets_the_rows_parse_gives_without_a_sink(monkeypatch, number_format):
    monkeypatch.setattr(rows, "TEXT_CHUNK", 4)
    plain_rows = "".join(
        f"B-{i};Товар\\{i};{i} {i:03d},{i % 100:02d};{i % 7};руб.\n" for i in range(30)
    )
    odd_rows = (
        "A-1;Кабель;1,234;5 шт.;$\n"  # undecided until the rows above decide
        "A-2;Розетка;0012,50;в наличии;\n"
        "A-3;Щит;-7;;EUR\n"
        ";Без артикула;15,00;1;RUB\n"
        "A-4;Лампа;по запросу;1;RUB\n"
    )
    data = ("Артикул;Наименование;Цена;Остаток;Валюта\n" + plain_rows + odd_rows * 3).encode()
    options = ParseOptions(number_format=number_format, default_currency="KZT")
    plain = parse(data, options)
    sink = _BlockSink()
    result = parse(data, options, sink=sink)
    # "dot" reads "1 000,05" with the row loop: a comma it does not expect.
    assert sink.blocks or number_format == "dot"
    assert_read_alike(result, plain, rows=sink.rows)


def test_blocks_of_a_file_without_name_quantity_or_currency_columns(monkeypatch):
    monkeypatch.setattr(rows, "TEXT_CHUNK", 3)
    data = ("Артикул;Цена\n" + "".join(f"A-{i};{i},{i % 10}0\n" for i in range(20))).encode()
    sink = _BlockSink()
    parse(data, ParseOptions(default_currency="RUB"), sink=sink)
    assert sink.blocks
    assert sink.rows == parse(data, ParseOptions(default_currency="RUB")).rows
