"""Wide rows and long lines: a row is read within Limits.max_columns cells (the rest is
cut, and a warning says so), a text line longer than Limits.max_line_bytes is never
split or decoded (a row error; a refusal when no header can be found above it)."""

from __future__ import annotations

import pytest

from pricefeed.parsing import (
    Limits,
    LineTooLong,
    MissingColumns,
    expand,
    parse,
)

from . import builders as b

HEAD = "Артикул;Наименование;Цена\n"


def rows(first: int, last: int) -> str:
    return "".join(f"A-{i};Кабель {i};{i},50\n" for i in range(first, last + 1))


class Blocks:
    """A sink that takes RowBlocks, as the import's writer does."""

    def __init__(self) -> None:
        self.skus: list[str] = []

    def __call__(self, rows: list[tuple]) -> None:
        self.skus.extend(r[1] for r in rows)

    def take_block(self, block) -> None:
        self.skus.extend(block.skus)


# --- columns -----------------------------------------------------------------------------


@pytest.mark.parametrize("quoted", [False, True])
def test_a_row_of_80000_fields_is_cut_to_max_columns_with_a_warning(quoted):
    wide = "A-X;Кабель X;7,00" + ";" * 80_000 + "\n"
    text = ('"Артикул";Наименование;Цена\n' if quoted else HEAD) + rows(1, 100) + wide
    result = parse((text + rows(101, 200)).encode())
    assert (result.rows_ok, result.rows_failed) == (201, 0)
    assert ("A-X", "Кабель X") in [r[1:3] for r in result.rows]
    assert result.warnings == [
        "1 row(s) have cells past column 1,024 (max_columns, setting "
        "PRICEFEED_PARSE_MAX_COLUMNS); those cells were not read (first: row 102)"
    ]


def test_a_header_of_80000_cells_is_searched_within_max_columns():
    header = "Артикул;Наименование;Цена" + ";Поле" * 80_000 + "\n"
    result = parse((header + rows(1, 50)).encode())
    assert (result.header_row, result.rows_ok) == (1, 50)
    assert "first: row 1" in result.warnings[0]


def test_a_header_cell_past_max_columns_is_not_seen():
    header = "Артикул;Наименование" + ";" * 1100 + "Цена\n"
    data = (header + "A-1;Кабель" + ";" * 1100 + "5\n").encode()
    assert parse(data, limits=Limits(max_columns=2000)).rows_ok == 1
    with pytest.raises(MissingColumns, match=r"missing columns: price"):
        parse(data)


def test_wide_workbook_rows_are_cut_too():
    wide = [["Артикул", "Цена"] + [f"Поле {i}" for i in range(40)]]
    data = b.xlsx(wide + [[f"A-{i}", i] + [i] * 40 for i in range(1, 30)])
    result = parse(data, limits=Limits(max_columns=10))
    assert result.rows_ok == 29
    assert result.warnings == [
        "30 row(s) have cells past column 10 (max_columns, setting PRICEFEED_PARSE_MAX_COLUMNS);"
        " those cells were not read (first: row 1)"
    ]


def test_ordinary_files_carry_no_warning():
    assert parse((HEAD + rows(1, 10)).encode()).warnings == []


# --- lines -------------------------------------------------------------------------------


def test_a_line_of_16_million_fields_from_a_small_zip_member_is_a_row_error():
    """16.7M delimiters compress to a few dozen KB; split, they would be 16.7M strings."""
    text = (HEAD + rows(1, 100)).encode() + b";" * (1 << 24) + b"\n" + rows(101, 200).encode()
    (member,) = expand(b.zip_of({"p.csv": text}), "p.zip", Limits(max_ratio=1000))
    assert len(b.zip_of({"p.csv": text})) < 250_000
    sink = Blocks()
    result = parse(member.data, sink=sink)
    assert (result.rows_ok, result.rows_failed) == (200, 1)
    assert result.errors == [
        (
            102,
            "line 102 is 16,777,216 bytes long, more than 1 MiB (max_line_bytes, setting "
            "PRICEFEED_PARSE_MAX_LINE_BYTES): not read",
        )
    ]
    assert sink.skus[-1] == "A-200"


def test_a_long_quoted_line_is_a_row_error_and_reading_goes_on():
    long_line = 'A-X;"' + "x" * 2_000_000 + '";5\n'
    text = '"Артикул";Наименование;Цена\n' + rows(1, 10) + long_line + rows(11, 20)
    result = parse(text.encode())
    assert result.rows_ok == 20
    assert result.errors == [
        (
            12,
            "line 12: a record longer than 1,048,576 characters (max_line_bytes, setting "
            "PRICEFEED_PARSE_MAX_LINE_BYTES): not read",
        )
    ]


def test_a_quoted_record_spanning_many_lines_is_cut_off_at_the_limit():
    """Fields holding line ends keep every line short: the record is bounded as a whole."""
    bomb = "A-X;" + '"x\n";' * 300_000 + "5\n"
    text = '"Артикул";Наименование;Цена\n' + rows(1, 10) + bomb
    result = parse(text.encode())
    assert result.rows_ok == 10
    row, reason = result.errors[0]
    assert row == 12
    assert reason.endswith(
        "a record longer than 1,048,576 characters (max_line_bytes, setting "
        "PRICEFEED_PARSE_MAX_LINE_BYTES): not read"
    )


def test_a_long_line_above_the_header_is_skipped_with_a_warning():
    text = "Прайс;" + "x" * 1_100_000 + "\n" + HEAD + rows(1, 5)
    result = parse(text.encode())
    assert (result.header_row, result.rows_ok, result.rows_failed) == (2, 5, 0)
    assert result.warnings == [
        "line 1 is 1,100,011 bytes long, more than 1 MiB (max_line_bytes, setting "
        "PRICEFEED_PARSE_MAX_LINE_BYTES): not read (above the data)"
    ]


def test_a_long_line_where_the_header_should_be_refuses_the_file():
    text = "Артикул;" + "x" * 1_100_000 + ";Цена\n" + rows(1, 5)
    with pytest.raises(LineTooLong) as exc:
        parse(text.encode())
    assert str(exc.value).startswith(
        "line 1 is 1,100,024 bytes long, more than 1 MiB (max_line_bytes, setting "
        "PRICEFEED_PARSE_MAX_LINE_BYTES): not read; and then: no header row"
    )


def test_max_line_bytes_is_a_setting_of_its_own():
    text = HEAD + rows(1, 3) + "A-X;" + "y" * 200 + ";1\n" + rows(4, 6)
    assert parse(text.encode()).rows_ok == 7
    result = parse(text.encode(), limits=Limits(max_line_bytes=100))
    assert result.rows_ok == 6
    assert result.errors[0][0] == 5
    assert "more than 100 bytes" in result.errors[0][1]


def test_a_file_whose_lines_end_in_cr_alone_is_read_line_by_line():
    """Its one "\\n"-ended chunk is longer than the limit, yet no line is."""
    text = (HEAD + rows(1, 40_000)).replace("\n", "\r")
    assert len(text.encode()) > (1 << 20)
    result = parse(text.encode())
    assert (result.rows_ok, result.rows_failed) == (40_000, 0)
