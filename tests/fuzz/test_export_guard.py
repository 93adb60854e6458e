"""Properties of the exports' formula guard (pricefeed.exports.formula_like), through the
real writers: a cell that a spreadsheet may read as a formula once NFKC-normalised and
past leading white space, zero-width characters and a BOM is written as text (CSV: a
leading ``'``; xlsx: a quote-prefixed string cell); the guard never touches a cell
that no reading of it makes a formula."""

from __future__ import annotations

import csv
import io
import unicodedata

import openpyxl
from hypothesis import example, given
from hypothesis import strategies as st

from pricefeed import exports

# Every BMP character whose NFKC form starts a formula: the ASCII ones, their fullwidth
# and small forms (＝ ＋ － ＠ ﹦ ﹢ ﹣ ﹫), and whatever else Unicode folds onto them.
LOOKALIKES = sorted(
    c for c in map(chr, range(0x10000)) if unicodedata.normalize("NFKC", c)[:1] in "=+-@"
)
# What a formula may hide behind: white space (str.isspace) and the invisible ones.
HIDING = sorted({*exports.INVISIBLE, " ", "\t", "\n", "\r", "\xa0", "\u3000", "\u2003"})
TABLE_COLUMNS = [exports.Column("text")]
# Any text an xlsx cell can hold (exports drops the rest before the guard sees it).
CELL_TEXT = st.text(
    st.characters(
        exclude_categories=["Cs"],
        exclude_characters="\x00\ufffe\uffff"
        + "".join(chr(c) for c in range(32) if chr(c) not in "\t\n\r"),
    ),
    max_size=30,
)


def written(text: str) -> tuple[str, openpyxl.cell.Cell]:
    """``text`` as one cell of a CSV export read back, and of an xlsx export."""
    table = exports.Table(columns=TABLE_COLUMNS, rows=[(text,)], title="t")
    data = b"".join(exports.csv_chunks(table))
    _header, (cell,) = csv.reader(io.StringIO(data[3:].decode(), newline=""), delimiter=";")
    out = io.BytesIO()
    table = exports.Table(columns=TABLE_COLUMNS, rows=[(text,)], title="t")
    exports.write_xlsx(table, out)
    xlsx_cell = openpyxl.load_workbook(io.BytesIO(out.getvalue())).active.cell(2, 1)
    return cell, xlsx_cell


def spreadsheet_start(text: str) -> str:
    """The first character a lenient spreadsheet may take for the cell's start: after
    NFKC, past every white space and every format character (category Cf, a wider set
    than exports.INVISIBLE)."""
    text = unicodedata.normalize("NFKC", text)
    for c in text:
        if not (c.isspace() or unicodedata.category(c) == "Cf"):
            return c
    return ""


@given(
    hiding=st.text(st.sampled_from(HIDING), max_size=6),
    start=st.sampled_from(LOOKALIKES),
    rest=CELL_TEXT,
)
@example(hiding="", start="＝", rest="1+1")
@example(hiding="\u200b", start="=", rest='HYPERLINK("http://x")')
@example(hiding="\ufeff", start="+", rest="1")
@example(hiding=" \u2060", start="＋", rest="cmd|' /C calc'!A0")
def test_a_formula_behind_invisible_characters_or_in_fullwidth_is_written_as_text(
    hiding, start, rest
):
    text = hiding + start + rest
    cell, xlsx_cell = written(text)

    assert cell == "'" + text
    assert xlsx_cell.data_type == "s"
    assert xlsx_cell.quotePrefix


@given(text=CELL_TEXT)
@example(text="Болт М6")
@example(text="\u200bБолт")
@example(text="１２３")
def test_the_guard_marks_only_what_may_read_as_a_formula(text):
    cell, xlsx_cell = written(text)

    if exports.formula_like(text):
        assert text.startswith(exports.FORMULA_STARTS) or spreadsheet_start(text) in "=+-@"
        assert cell == "'" + text
        assert xlsx_cell.quotePrefix
    else:
        assert cell == text
        assert not xlsx_cell.quotePrefix
