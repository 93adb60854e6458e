"""Properties of the workbook guards' budgets (issue 30): the text a reader copies into
cells that refer to shared strings is never under-counted (a workbook past
``max_text_bytes`` is always refused), a workbook well within it is never refused,
and a small file never spans more cells than its size allows (``Limits.for_file``)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from devkit import hostile_files as h
from pricefeed.parsing import Limits, SheetTooLarge, WorkbookRefused
from pricefeed.parsing.types import SMALL_FILE_CELLS, letter_to_index
from pricefeed.parsing.workbook_guard import check_workbook
from pricefeed.parsing.xls_guard import check_xls

strings = st.lists(st.text(alphabet="xyzЖЯ€ ", min_size=0, max_size=3000), min_size=1, max_size=6)


@st.composite
def shared_cells(draw):
    """(strings, references: one string index per cell)."""
    table = draw(strings)
    refs = draw(st.lists(st.integers(0, len(table) - 1), min_size=1, max_size=400))
    return table, refs


def xlsx_of(table: list[str], refs: list[int]) -> bytes:
    rows = "".join(
        f'<row r="{r}"><c r="A{r}" t="s"><v>{i}</v></c></row>' for r, i in enumerate(refs, 1)
    )
    sheet = f'<worksheet xmlns="{h.MAIN_NS}"><sheetData>{rows}</sheetData></worksheet>'
    items = "".join(f'<si><t xml:space="preserve">{t}</t></si>' for t in table)
    return h.handmade_xlsx(sheet, shared_strings=f'<sst xmlns="{h.MAIN_NS}">{items}</sst>')


def xls_of(table: list[str], refs: list[int]) -> bytes:
    label = struct.Struct("<HHHHHI")
    records = b"".join(label.pack(0x00FD, 10, r, 0, 0, i) for r, i in enumerate(refs))
    return h.compound_file("Workbook", h.biff8_workbook([("S", records)], strings=table))


def copied(table: list[str], refs: list[int]) -> int:
    """What a reader holds: each cell's own copy of its string, in UTF-8."""
    return sum(len(table[i].encode()) for i in refs)


@given(shared_cells(), st.integers(1, 2_000_000))
def test_xlsx_copies_past_the_budget_are_always_refused(cells, budget):
    table, refs = cells
    data = xlsx_of(table, refs)
    limits = Limits(max_text_bytes=budget)
    try:
        check_workbook(data, limits)
    except WorkbookRefused:
        return
    assert copied(table, refs) <= budget


@given(shared_cells(), st.integers(1, 2_000_000))
def test_xls_copies_past_the_budget_are_always_refused(cells, budget):
    table, refs = cells
    data = xls_of(table, refs)
    try:
        check_xls(data, Limits(max_text_bytes=budget))
    except WorkbookRefused:
        return
    assert copied(table, refs) <= budget


@given(shared_cells())
def test_a_workbook_within_a_budget_of_its_worst_case_passes(cells):
    table, refs = cells
    # Three bytes a character, plus markup: what either guard may charge at most.
    worst = sum(3 * len(table[i]) + 64 for i in refs)
    xlsx = xlsx_of(table, refs)
    check_workbook(xlsx, Limits(max_text_bytes=worst + len(xlsx) * 8))
    check_xls(xls_of(table, refs), Limits(max_text_bytes=worst))


@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(1, 10**4))
def test_the_cells_a_file_may_span_grow_with_its_size_within_bounds(a, b, per_byte):
    limits = Limits(max_cells_per_byte=per_byte)
    small, large = sorted((a, b))
    assert limits.for_file(small).max_cells <= limits.for_file(large).max_cells
    for size in (small, large):
        cells = limits.for_file(size).max_cells
        assert min(SMALL_FILE_CELLS, limits.max_cells) <= cells <= limits.max_cells


@given(st.from_regex(r"[A-Z]{1,3}", fullmatch=True), st.integers(1, 1_048_576))
def test_a_far_cell_past_what_the_file_may_span_is_refused(column, row):
    data = h.xlsx_far_cell(f"{column}{row}")
    cols = max(letter_to_index(column), 1) + 1
    span = (max(row, 2) + 1) * (cols + 1)
    try:
        check_workbook(data, Limits())
    except SheetTooLarge:
        return
    assert span <= Limits().for_file(len(data)).max_cells


@st.composite
def simple_cells(draw):
    """Cells in the common form (one letter, up to six digits) in any order, each with
    up to 2,000 characters of text, so that a sheet runs over several of the pieces the
    guard inflates it in (256 KiB) and a reference may be cut at a piece's end."""
    refs = draw(
        st.lists(st.tuples(st.integers(0, 25), st.integers(1, 999_999)), min_size=1, max_size=250)
    )
    sizes = draw(st.lists(st.integers(0, 2000), min_size=len(refs), max_size=len(refs)))
    return refs, sizes


@settings(max_examples=50)
@given(simple_cells())
def test_the_span_a_message_is_charged_covers_every_cell_and_little_more(cells):
    refs, sizes = cells
    body = "".join(
        f'<row><c r="{chr(65 + col)}{row}" t="inlineStr"><is><t>{"x" * size}</t></is></c></row>'
        for (col, row), size in zip(refs, sizes, strict=True)
    )
    data = h.handmade_xlsx(
        f'<worksheet xmlns="{h.MAIN_NS}"><sheetData>{body}</sheetData></worksheet>'
    )
    # A large per-byte allowance: the sheet is measured while it inflates (the path of
    # files over ~400 KB), not by the exact pass of small files.
    charged = check_workbook(data, Limits(max_cells_per_byte=10**6))
    rows = max(row for _, row in refs)
    cols = max(col for col, _ in refs) + 1
    exact = (rows + 1) * (cols + 1)  # as the exact pass counts (from A1, one over)
    assert exact <= charged <= (rows * 11 // 10 + 10) * (cols + 1)
