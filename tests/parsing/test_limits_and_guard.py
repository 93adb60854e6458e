from __future__ import annotations

import pytest

from pricefeed.parsing import CorruptFile, Limits, parse
from pricefeed.parsing.workbook_guard import _PartScan

from . import builders as b


def test_limits_must_be_positive_integers():
    with pytest.raises(ValueError, match=r"Limits\.max_depth must be a positive integer"):
        Limits(max_depth=0)


def _scan(xml: bytes, piece: int) -> _PartScan:
    scan = _PartScan("sheet.xml")
    for i in range(0, len(xml), piece):
        scan.feed(xml[i : i + piece])
    scan.finish()
    return scan


ORDINARY = b.sheet_xml([["Артикул", "Цена"]] + [[f"A-{i}", i] for i in range(1, 40)]).encode()


@pytest.mark.parametrize("piece", [7, 13, 64, 100, 257, len(ORDINARY)])
def test_ordinary_sheets_stay_on_the_fast_path_however_they_are_cut(piece):
    scan = _scan(ORDINARY, piece)
    assert scan.sheet and not scan.unusual


@pytest.mark.parametrize("piece", [7, 13, 64, 100, 257])
def test_an_unusual_tag_is_seen_however_it_is_cut(piece):
    xml = ORDINARY.replace(b'<c r="B20">', b'<c r="AB20">')
    assert _scan(xml, piece).unusual


def test_a_damaged_text_table_is_a_readable_error():
    data = ("Артикул;Цена\nA;" + "x" * 200_000 + "\n").encode()
    with pytest.raises(CorruptFile, match="malformed text table at line 2"):
        parse(data)


def test_a_damaged_workbook_is_a_readable_error():
    good = b.xlsx([["Артикул", "Цена"], ["A", 1]])
    with pytest.raises(CorruptFile, match=r"^workbook: damaged zip archive"):
        parse(good[: len(good) // 2])


def test_an_unread_line_counts_toward_the_row_limit():
    """A line that is not valid UTF-8 is a failed data row: past ``max_rows`` with it,
    the file is refused, as with any other row (hypothesis found a UTF-8 file with one
    row too many that slipped through as a line that could not be read)."""
    from pricefeed.parsing import ParseOptions, TooManyRows

    rows = b"".join(f"A-{i};{i},00\n".encode() for i in range(1, 6))
    data = "\ufeffАртикул;Цена\n".encode() + rows + b"B\x81;6,00\n"

    with pytest.raises(TooManyRows):
        parse(data, ParseOptions(), Limits(max_rows=5))
    parsed = parse(data, ParseOptions(), Limits(max_rows=6))
    assert (parsed.rows_total, parsed.rows_ok) == (6, 5)
    assert parsed.errors == [(7, "line 7 is not valid UTF-8")]
