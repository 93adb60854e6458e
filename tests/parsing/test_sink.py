"""parse(sink=...): rows handed over in chunks while the file is read, as without a sink."""

from __future__ import annotations

import pytest

from pricefeed.parsing import Limits, ParseOptions, TooManyRows, parse, reader

from . import builders as b


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(reader, "SINK_CHUNK", 3)


def _collect(data: bytes, options: ParseOptions | None = None, limits: Limits | None = None):
    chunks: list[list] = []
    result = parse(data, options, limits, sink=lambda rows: chunks.append(list(rows)))
    return result, chunks


def test_rows_reach_the_sink_in_file_order_and_are_not_kept(small_chunks):
    text = "Артикул;Цена\n" + "".join(f"A-{i};{i},50\n" for i in range(10))
    data = text.encode("cp1251")
    plain = parse(data)
    result, chunks = _collect(data)
    assert [row for chunk in chunks for row in chunk] == plain.rows
    assert max(len(chunk) for chunk in chunks) <= 4
    assert result.rows == []
    assert (result.rows_ok, result.rows_failed, result.rows_total) == (10, 0, 10)


def test_undecided_numbers_are_held_back_until_the_file_decides(small_chunks):
    # "1,234" is 1.234 or 1234 until "1 234,50" shows that ',' is the decimal separator.
    rows = "".join(f"A-{i};1,234\n" for i in range(7)) + "B-1;1 234,50\nB-2;1,234\n"
    data = ("Артикул;Цена\n" + rows).encode("cp1251")
    result, chunks = _collect(data)
    handed = [row for chunk in chunks for row in chunk]
    assert handed == parse(data).rows
    assert {str(row[3]) for row in handed if row[1].startswith("A-")} == {"1.234"}
    assert result.rows_ok == 9


def test_numbers_never_decided_are_read_as_without_a_sink(small_chunks):
    data = ("Артикул;Цена\n" + "".join(f"A-{i};1.234\n" for i in range(8))).encode()
    _, chunks = _collect(data)
    assert [row for chunk in chunks for row in chunk] == parse(data).rows


def test_workbook_rows_reach_the_sink_too(small_chunks):
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


def test_rows_handed_over_before_a_refusal_are_the_callers_to_discard(small_chunks):
    data = ("Артикул;Цена\n" + "".join(f"A-{i};{i}.5\n" for i in range(20))).encode()
    chunks: list[list] = []
    with pytest.raises(TooManyRows):
        parse(data, limits=Limits(max_rows=10), sink=lambda rows: chunks.append(list(rows)))
    assert chunks  # the caller (the import service) rolls them back
