"""What a workbook's guard says it spans (check_file: the cells a message is charged,
PRICEFEED_MESSAGE_PARSE_CELLS), and runs of empty rows skipped without being converted
one by one (issue 30)."""

from __future__ import annotations

import pytest

from devkit import hostile_files as h
from pricefeed.parsing import Limits, check_file, parse, rows
from pricefeed.parsing.workbook_guard import check_workbook

from . import builders as b


def test_a_text_table_spans_nothing():
    assert check_file(b"sku;price\nA-1;10\n", Limits()).cells == 0


def test_a_small_xlsx_spans_what_its_exact_pass_measures():
    data = b.xlsx([["sku", "price"], ["A-1", 10], ["A-2", 11]])
    # From A1 to B3, counted as the exact pass counts: one row and one column over.
    assert check_file(data, Limits()).cells == 4 * 3


def test_an_xls_spans_the_cells_calamine_holds():
    data = h.xls_with_cells([(0, 0, "sku"), (0, 1, "price"), (1, 0, "A-1"), (1, 1, 10.5)])
    cells = check_file(data, Limits()).cells
    # Its one sheet's 2 x 2 grid and python-calamine's copy of it, at least.
    assert cells >= 2 * 2 * 2


def simple_sheet(cells: list[str], *, padding: int = 0) -> bytes:
    """An xlsx whose cells (references in the common form) come in the order given,
    each with ``padding`` characters of text."""
    text = "x" * padding
    body = "".join(
        f'<row><c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c></row>' for ref in cells
    )
    return h.handmade_xlsx(
        f'<worksheet xmlns="{h.MAIN_NS}"><sheetData>{body}</sheetData></worksheet>'
    )


# A large per-byte allowance: sheets are measured while they inflate (the path of files
# over ~400 KB), not by the exact pass.
MEASURED = Limits(max_cells_per_byte=10**6)


def test_a_large_sheet_is_measured_up_to_its_farthest_cell_in_any_order():
    # Ascending rows over several 256 KiB pieces, but the farthest row comes first and
    # the widest column in the middle: neither is any piece's last reference.
    refs = ["A500000", *[f"B{r}" for r in range(1, 3000)]]
    refs.insert(1500, "K7")
    data = simple_sheet(refs, padding=300)  # ~1 MB of sheet XML

    # Rows up to 500,000 rounded to two significant digits (509,999), columns A..K.
    assert check_workbook(data, MEASURED) == (509_999 + 1) * (10 + 2)


def test_rows_are_counted_up_to_a_tenth_more_than_the_sheet_has():
    refs = [f"H{r}" for r in range(1, 1200)] + ["H100003"]
    assert check_workbook(simple_sheet(refs), MEASURED) == (109_999 + 1) * (7 + 2)


def read_rows_counted(monkeypatch) -> list[int]:
    """Counts the rows handed to the workbook conversion (column and row loops)."""
    seen: list[int] = []
    by_columns, by_rows = rows._typed_columns, rows._rows_typed

    def columns(chunk, row_no, ctx):
        seen.append(len(chunk))
        return by_columns(chunk, row_no, ctx)

    def each(chunk, row_number, ctx):
        seen.append(len(chunk))
        return by_rows(chunk, row_number, ctx)

    monkeypatch.setattr(rows, "_typed_columns", columns)
    monkeypatch.setattr(rows, "_rows_typed", each)
    return seen


def test_a_million_empty_rows_between_two_price_rows_are_skipped_unconverted(monkeypatch):
    seen = read_rows_counted(monkeypatch)

    parsed = parse(h.xlsx_empty_rows())

    assert [row[:4] for row in parsed.rows] == [
        (2, "A-1", "", pytest.approx(10.5)),
        (999_999, "A-2", "", pytest.approx(11.5)),
    ]
    assert parsed.skipped_rows == 999_996
    # Only the price rows and the chunks' short ends reach the conversion.
    assert sum(seen) < 2 * rows.EMPTY_RUN


def test_short_runs_of_empty_rows_stay_with_their_rows(monkeypatch):
    table = [["sku", "price"]]
    for i in range(40):
        table += [[f"A-{i}", 10 + i]] + [[None, None]] * (i % 3)
    seen = read_rows_counted(monkeypatch)

    parsed = parse(b.xlsx(table))

    assert parsed.rows_ok == 40
    assert parsed.skipped_rows == sum(i % 3 for i in range(40))
    # One chunk, not cut at each blank row (tried by columns, then by the row loop).
    assert set(seen) == {parsed.rows_ok + parsed.skipped_rows}


def test_a_row_of_zeros_is_not_empty():
    table = [["sku", "price", "qty"], ["A-1", 10, 1], *[[0, 0, 0]] * 20, ["A-2", 11, 2]]

    parsed = parse(b.xlsx(table))

    assert parsed.rows_ok == 22  # each is read: SKU "0", price 0
    assert parsed.skipped_rows == 0


def test_the_exact_pass_reads_a_sheet_window_by_window_and_measures_the_same(monkeypatch):
    """A sheet's exact pass holds one window's references at a time; cut into windows of
    a few hundred bytes (each ending before a "<"), it measures what one window does:
    the farthest row and the widest column anywhere, r-less rows and cells counted."""
    from pricefeed.parsing import workbook_guard

    body = "".join(
        f'<row r="{r}"><c r="B{r}"><v>1</v></c><c><v>2</v></c></row>' for r in range(1, 200)
    )
    body += '<row><c r="K7" t="inlineStr"><is><t>far</t></is></c></row><row/>'
    body += "".join(f'<row r="{r}"><c r="A{r}"><v>3</v></c></row>' for r in range(200, 400))
    data = h.handmade_xlsx(
        f'<worksheet xmlns="{h.MAIN_NS}"><sheetData>{body}</sheetData></worksheet>'
    )
    whole = check_workbook(data, Limits())
    # Rows 1..399, then two r-less rows; K (11) plus one r-less cell per row of the first
    # part, as the exact pass counts (from A1, one over).
    assert whole == (399 + 2 + 1) * (11 + 199 + 1)
    for window in (37, 256, 1000):
        monkeypatch.setattr(workbook_guard, "EXACT_WINDOW", window)
        assert check_workbook(data, Limits()) == whole
