"""Runs of empty workbook rows are skipped in one step (rows._data_runs, issue 30): a
sheet reads the same, row for row, as when every empty row goes through the row loop."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from devkit import hostile_files as h
from pricefeed.parsing import parse, rows

# A row: a price row, a row the loop reads as something else, or a run of empty rows.
ROW = st.one_of(
    st.tuples(st.just("price"), st.integers(0, 5)),
    st.tuples(st.just("text"), st.sampled_from(["Итого", "1.1. Дрели", "0", " "])),
    st.tuples(st.just("empty"), st.integers(1, 300)),
)


def sheet(layout: list[tuple[str, object]]) -> bytes:
    out = [
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>price</t></is></c></row>'
    ]
    r = 1
    for kind, value in layout:
        if kind == "empty":
            r += int(value)  # rows with no tag at all: the reader gives them empty
            continue
        r += 1
        if kind == "price":
            cells = (
                f'<c r="A{r}" t="inlineStr"><is><t>A-{r}</t></is></c><c r="B{r}"><v>{value}</v></c>'
            )
        else:
            cells = f'<c r="A{r}" t="inlineStr"><is><t>{value}</t></is></c>'
        out.append(f'<row r="{r}">{cells}</row>')
    return h.handmade_xlsx(
        f'<worksheet xmlns="{h.MAIN_NS}"><sheetData>{"".join(out)}</sheetData></worksheet>'
    )


def outcome(data: bytes) -> tuple:
    parsed = parse(data)
    return (
        parsed.rows,
        parsed.errors,
        parsed.rows_total,
        parsed.skipped_rows,
        parsed.skipped_headings,
        parsed.skipped_totals,
        parsed.warnings,
    )


@settings(max_examples=60)
@given(st.lists(ROW, min_size=1, max_size=60))
def test_a_sheet_reads_the_same_with_its_empty_runs_skipped(layout):
    data = sheet([("price", 1), *layout])
    skipped = outcome(data)
    with mock.patch.object(rows, "EMPTY_RUN", 10**9):
        each = outcome(data)
    assert skipped == each
