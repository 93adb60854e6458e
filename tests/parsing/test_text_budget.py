"""The cells' text budget (Limits.max_text_bytes): a workbook whose cells refer to one
long shared string is refused by its guard before python-calamine copies the string into
every cell (issue 30: a 1.15 MB xlsx asked for 4.9 GB and aborted the worker)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from devkit import hostile_files as h
from pricefeed.parsing import Limits, SheetTooLarge, WorkbookRefused, parse
from pricefeed.parsing.types import SMALL_FILE_CELLS
from pricefeed.parsing.workbook_guard import _shared_bytes, _string_lengths, check_workbook
from pricefeed.parsing.xls_guard import _string_lengths as xls_string_lengths
from pricefeed.parsing.xls_guard import check_xls

from . import builders as b

MiB = 2**20


@pytest.mark.parametrize(
    "build", [h.xlsx_shared_string_copies, h.xls_shared_string_copies], ids=["xlsx", "xls"]
)
def test_one_shared_string_in_150000_cells_is_refused_before_calamine(no_writes, build):
    data = build()
    assert len(data) < 3 * MiB
    with no_writes(), pytest.raises(WorkbookRefused) as exc:
        parse(data)
    assert "PRICEFEED_PARSE_MAX_TEXT_BYTES" in str(exc.value)
    assert exc.value.args[0].params["size"] > 4_000_000_000


@pytest.mark.parametrize(
    ("build", "check"),
    [(h.xlsx_shared_string_copies, check_workbook), (h.xls_shared_string_copies, check_xls)],
    ids=["xlsx", "xls"],
)
def test_the_budget_counts_each_copy(build, check):
    data = build(cells=1000, length=1000)  # 1 MB of copies (3 MB at most for an xls)
    check(data, Limits(max_text_bytes=4 * MiB))
    with pytest.raises(WorkbookRefused):
        check(data, Limits(max_text_bytes=MiB - 1))


@pytest.mark.parametrize(
    "build", [h.xlsx_shared_string_copies, h.xls_shared_string_copies], ids=["xlsx", "xls"]
)
def test_a_workbook_within_the_budget_is_read(build):
    parsed = parse(build(cells=50, length=2000), limits=Limits(max_text_bytes=4 * MiB))
    assert (parsed.rows[0][1], parsed.rows[0][3]) == ("A-1", Decimal("10.5"))


@pytest.mark.parametrize(
    "cell",
    [
        "<c r='A{r}' t='s'><v>0</v></c>",
        '<x:c r="A{r}" t="s"><x:v>0</x:v></x:c>',
        '<c t="s" r="A{r}" s="1"><v> 0</v></c>',
        '<c r="A{r}" x=">" t="s"><v y=">">0</v></c>',
    ],
    ids=["single-quotes", "prefixed", "t-first", "gt-in-values"],
)
def test_shared_string_cells_are_counted_in_any_spelling(cell):
    rows = "".join(f'<row r="{r}">{cell.format(r=r)}</row>' for r in range(1, 1001))
    sheet = (
        f'<worksheet xmlns="{b.MAIN_NS}" xmlns:x="{b.MAIN_NS}"><sheetData>{rows}'
        "</sheetData></worksheet>"
    )
    table = f'<sst xmlns="{b.MAIN_NS}"><si><t>{"y" * 5000}</t></si></sst>'
    data = b.handmade_xlsx(sheet, shared_strings=table)
    with pytest.raises(WorkbookRefused):
        check_workbook(data, Limits(max_text_bytes=4 * MiB))


def test_a_self_closing_shared_cell_takes_no_string():
    table = b"<sst><si><t>abc</t></si><si><t>" + b"z" * 100 + b"</t></si></sst>"
    lengths = _string_lengths([table])
    assert lengths[0] >= 3 and lengths[1] >= 100
    sheet = b'<c r="A1" t="s"/><c r="A2" t="s"><v>1</v></c><c r="A3"><v>0</v></c>'
    assert _shared_bytes(sheet, lengths) == lengths[1]


def test_a_table_without_strings_has_no_lengths():
    assert _string_lengths([b"<sst/>"]) == []


def test_an_xls_string_cut_by_continue_records_is_measured_whole():
    data = h.xls_shared_string_copies(cells=1, length=20_000)  # 40 KB: five records
    from pricefeed.parsing.cfb import CompoundFile

    stream = CompoundFile(data).stream("Workbook")
    records, pos = [], 0
    while pos + 4 <= len(stream):
        kind = int.from_bytes(stream[pos : pos + 2], "little")
        size = int.from_bytes(stream[pos + 2 : pos + 4], "little")
        body = stream[pos + 4 : pos + 4 + size]
        if kind == 0x00FC:
            records = [body[8:]]
        elif kind == 0x003C and records:
            records.append(body)
        pos += 4 + size
    assert len(records) > 4
    assert xls_string_lengths(records)[0] == 3 * 20_000


def test_a_far_cell_in_a_small_xlsx_is_refused_for_its_size(no_writes):
    data = h.xlsx_far_cell()  # 1.5 KB spanning 31 x 999,990 cells: within max_cells
    assert len(data) < 2000
    with no_writes(), pytest.raises(SheetTooLarge):
        parse(data)
    # The same span is allowed to a file large enough to hold it that densely.
    check_workbook(data, Limits(max_cells_per_byte=40_000))


def test_a_far_cell_in_a_small_xls_is_refused_for_its_size(no_writes):
    data = h.xls_with_cells(
        [(0, 0, "sku"), (0, 1, "price"), (1, 0, "A-1"), (1, 1, 1.0), (65535, 200, 1.0)]
    )
    with no_writes(), pytest.raises(SheetTooLarge):
        parse(data)


def test_small_files_keep_a_floor_of_cells():
    assert Limits().for_file(10).max_cells == SMALL_FILE_CELLS
    assert Limits().for_file(10**9).max_cells == Limits().max_cells
    assert Limits(max_cells_per_byte=2).for_file(500_000).max_cells == 1_000_000


def test_a_run_of_unclosed_cell_tags_is_measured_in_linear_time():
    # Each "<c " of the run is scanned to the next "<" only: 6 MB in well under a second.
    assert _shared_bytes(b"<c " * 2_000_000, [1]) == 0
