"""The .xls guard: the compound file and the BIFF records are read before python-calamine
opens the workbook, and every construction that would make calamine abort the process or
spin for hours is refused. The refusals are asserted through check_xls() (a regression
there must fail a test, not kill the test run); parse() is shown to call it first."""

from __future__ import annotations

import io
import struct

import pytest
from python_calamine import CalamineWorkbook

from devkit import hostile_files as h
from pricefeed.parsing import (
    CorruptFile,
    Limits,
    SheetTooLarge,
    WorkbookRefused,
    parse,
    reader,
)
from pricefeed.parsing.xls_guard import check_xls

from . import builders as b

HEADER = [(0, 0, "Артикул"), (0, 1, "Наименование"), (0, 2, "Цена")]


def price_rows(count: int) -> list[tuple[int, int, str | float]]:
    cells: list[tuple[int, int, str | float]] = list(HEADER)
    for i in range(1, count + 1):
        cells += [(i, 0, f"A-{i}"), (i, 1, f"Кабель {i}"), (i, 2, i + 0.5)]
    return cells


def number(row: int, col: int, value: float = 1.0) -> bytes:
    return h.biff_record(0x0203, struct.pack("<HHHd", row, col, 0, value))


def workbook(*sheets: bytes, strings: tuple[str, ...] = ("x",)) -> bytes:
    """A compound file holding a workbook with these sheets' records."""
    return h.compound_file(
        "Workbook",
        h.biff8_workbook([(f"S{i}", r) for i, r in enumerate(sheets)], strings=list(strings)),
    )


def never_opened(monkeypatch):
    """parse() must refuse before the workbook reaches calamine."""

    def fail(*args, **kwargs):
        raise AssertionError("the workbook reached calamine")

    monkeypatch.setattr(reader, "read_workbook", fail)


# --- the builders -----------------------------------------------------------------------


@pytest.mark.parametrize("rows", [2, 300])  # a mini-stream workbook, a sector-chain one
def test_built_xls_files_open_in_calamine_with_their_cells(rows):
    data = h.xls_with_cells(price_rows(rows))
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(data)).get_sheet_by_index(0)
    values = sheet.to_python()
    assert values[0] == ["Артикул", "Наименование", "Цена"]
    assert values[rows] == [f"A-{rows}", f"Кабель {rows}", rows + 0.5]
    assert len(values) == rows + 1


def test_built_xls_files_parse_as_price_lists():
    result = parse(h.xls_with_cells(price_rows(300)))
    assert (result.format, result.rows_ok, result.rows_total) == ("xls", 300, 300)
    assert result.rows[0][1:4] == ("A-1", "Кабель 1", pytest.approx(1.5))


def test_xls_files_written_by_xlwt_pass_the_guard():
    data = b.xls([["Артикул", "Цена"]] + [[f"A-{i}", i * 1.5] for i in range(5000)])
    check_xls(data, Limits())
    assert parse(data).rows_ok == 5000


# --- cells spread over the grid -----------------------------------------------------------


def test_a_cell_at_the_last_row_and_column_of_the_grid_is_refused_before_calamine(monkeypatch):
    data = h.xls_with_cells([*price_rows(1), (65535, 65535, "x")])
    assert len(data) < 6000
    with pytest.raises(SheetTooLarge, match=r"65,536 rows x 65,535 columns.*max_cells"):
        check_xls(data, Limits())
    never_opened(monkeypatch)
    with pytest.raises(SheetTooLarge, match="PRICEFEED_PARSE_MAX_CELLS"):
        parse(data)


def test_cells_far_apart_are_measured_whatever_the_dimensions_record_claims():
    data = h.xls_with_cells([*price_rows(1), (65535, 65535, "x")], dims=(0, 1, 0, 2))
    with pytest.raises(SheetTooLarge, match=r"places cells across 65,536 rows x 65,536 columns"):
        check_xls(data, Limits())


def test_a_sheet_spanning_iv65536_is_refused_as_calamine_holds_it_twice():
    """IV65536 is 16.8M cells: under 32M, but calamine keeps the grid and python-calamine
    copies the sheet it reads (measured: 1.1 GB)."""
    data = h.xls_with_cells([*price_rows(1), (65535, 255, "x")], dims=(0, 1, 0, 2))
    # Without the bound per byte of the file (Limits.for_file), which refuses it first.
    unbounded = Limits(max_cells_per_byte=10**6)
    with pytest.raises(SheetTooLarge, match=r"holds 33,554,432 cells .* more than 32,000,000"):
        check_xls(data, unbounded)


def test_a_dimensions_record_whose_last_row_is_before_its_first_is_refused():
    """Calamine computes last - first + 1 in 32 bits: 4 billion rows, reserved at once."""
    lying = h.biff_record(0x0200, struct.pack("<IIHHH", 10, 5, 0, 3, 0))
    with pytest.raises(SheetTooLarge, match=r"DIMENSIONS\) of 4,294,967,291 rows x 3 columns"):
        check_xls(workbook(lying + number(0, 0)), Limits())


def test_a_dimensions_claim_over_the_limit_is_refused_even_without_cells():
    claim = h.dimensions(0, 999, 0, 99)
    check_xls(workbook(claim + number(0, 0)), Limits(max_cells=100_000))
    with pytest.raises(SheetTooLarge, match=r"1,000 rows x 100 columns, more than 99,999"):
        check_xls(workbook(claim + number(0, 0)), Limits(max_cells=99_999))


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (h.biff_record(0x027E, struct.pack("<HHHI", 3000, 2, 0, 2)), "RK"),
        (h.biff_record(0x00FD, struct.pack("<HHHI", 3000, 2, 0, 0)), "LABELSST"),
        (h.biff_record(0x0204, struct.pack("<HHH", 3000, 2, 0) + b"\x01\x00\x01a\x00"), "LABEL"),
        (h.biff_record(0x0205, struct.pack("<HHHBB", 3000, 2, 0, 1, 0)), "BOOLERR"),
        (h.biff_record(0x0201, struct.pack("<HHH", 3000, 2, 0)), "BLANK"),
        (h.biff_record(0x00D6, struct.pack("<HHH", 3000, 2, 0) + b"\x01\x00\x01a\x00"), "RSTRING"),
        (
            h.biff_record(0x00BD, struct.pack("<HHHIH", 3000, 0, 0, 2, 2000)),
            "MULRK, by its last column",
        ),
    ],
)
def test_every_cell_record_places_a_cell(record, why):
    limits = Limits(max_cells=2_000)
    check_xls(workbook(number(0, 0)), limits)
    with pytest.raises(SheetTooLarge, match="places cells across"):
        check_xls(workbook(number(0, 0) + record), limits)


def test_a_string_record_before_any_formula_places_a_cell_at_a1():
    """Calamine puts a formula's string result at the last formula's cell: (0, 0) when
    none came before."""
    cells = number(3000, 100) + number(3001, 101)
    limits = Limits(max_cells=100)
    check_xls(workbook(cells), limits)
    string = h.biff_record(0x0207, b"\x01\x00\x01s\x00")
    with pytest.raises(SheetTooLarge, match=r"3,002 rows x 102 columns"):
        check_xls(workbook(cells + string), limits)


def test_sheets_over_the_limit_in_all_are_refused():
    sheet = number(0, 0) + number(99, 9)  # 1,000 cells
    check_xls(workbook(sheet, sheet), Limits(max_cells=3_000))  # 2 x 1,000 + one copy
    with pytest.raises(SheetTooLarge, match=r"holds 4,000 cells"):
        check_xls(workbook(sheet, sheet, sheet), Limits(max_cells=3_000))


# --- other claims and constructions ---------------------------------------------------------


def test_sheets_pointing_at_the_same_records_are_refused():
    """Calamine would read the records once per sheet: 50 MB of them, thousands of times."""
    cells = b"".join(number(i, 0) for i in range(100))
    stream = bytearray(h.biff8_workbook([("A", cells), ("B", number(1, 1))], strings=[]))
    first = stream.find(b"\x85\x00")  # BOUNDSHEET8 of A, then of B
    second = stream.find(b"\x85\x00", first + 4)
    stream[second + 4 : second + 8] = stream[first + 4 : first + 8]
    with pytest.raises(WorkbookRefused, match=r"share records \(sheet 'B' is read from where"):
        check_xls(h.compound_file("Workbook", bytes(stream)), Limits())


def test_a_shared_string_table_claiming_billions_of_strings_is_refused():
    stream = bytearray(h.biff8_workbook([("S", number(0, 0))], strings=["a", "b"]))
    sst = stream.find(b"\xfc\x00")
    stream[sst + 8 : sst + 12] = struct.pack("<I", 2_000_000_000)
    with pytest.raises(WorkbookRefused, match=r"claims 2,000,000,000 strings"):
        check_xls(h.compound_file("Workbook", bytes(stream)), Limits())


def test_a_formula_asking_for_half_a_million_spaces_is_refused():
    """Measured: one such 10 KB record keeps calamine busy for 4 s; 50 MB of them, hours."""
    tokens = b"\x1e\x05\x00" + b"\x19\x40\x00\xff" * 2000  # an integer, 2,000 x 255 spaces
    formula = h.biff_record(
        0x0006,
        struct.pack("<HHHdHIH", 1, 1, 0, 5.0, 0, 0, len(tokens)) + tokens,
    )
    with pytest.raises(WorkbookRefused, match=r"row 2, column 2 asks for 510,000 spaces"):
        check_xls(workbook(number(0, 0) + formula), Limits())


def test_a_formula_with_a_few_spaces_passes():
    tokens = b"\x1e\x05\x00" + b"\x19\x40\x00\x02"
    formula = h.biff_record(
        0x0006, struct.pack("<HHHdHIH", 1, 1, 0, 5.0, 0, 0, len(tokens)) + tokens
    )
    check_xls(workbook(number(0, 0) + formula), Limits())


# --- the compound file ----------------------------------------------------------------------

SECTOR = 512


def u32_at(data: bytes, offset: int) -> int:
    return struct.unpack_from("<I", data, offset)[0]


def patched(data: bytes, offset: int, value: int, size: int = 4) -> bytes:
    out = bytearray(data)
    out[offset : offset + size] = value.to_bytes(size, "little")
    return bytes(out)


def layout(data: bytes) -> dict[str, int]:
    """Where the builders' compound file keeps its parts (sector numbers)."""
    fat_sectors = u32_at(data, 44)
    return {"fat": 0, "directory": u32_at(data, 48), "fat_sectors": fat_sectors}


def fat_offset(sector: int) -> int:
    return SECTOR + sector * 4  # the FAT is sector 0, right after the header


def test_a_sector_chain_that_loops_is_refused():
    data = h.xls_with_cells(price_rows(300))  # the workbook in sectors
    stream_entry = SECTOR + layout(data)["directory"] * SECTOR + 128
    first = u32_at(data, stream_entry + 116)
    looped = patched(data, fat_offset(first + 3), first)
    with pytest.raises(CorruptFile, match=r"stream 'Workbook' loops"):
        check_xls(looped, Limits())


def test_a_chain_naming_a_sector_past_the_end_is_refused():
    """Calamine grows its buffer to any sector number a chain names (2**31 x 512 bytes)."""
    data = h.xls_with_cells(price_rows(300))
    stream_entry = SECTOR + layout(data)["directory"] * SECTOR + 128
    first = u32_at(data, stream_entry + 116)
    with pytest.raises(CorruptFile, match=r"names sector 0x7fffffff, past the end"):
        check_xls(patched(data, fat_offset(first), 0x7FFFFFFF), Limits())


def test_a_free_sector_in_a_chain_is_refused():
    data = h.xls_with_cells(price_rows(300))
    stream_entry = SECTOR + layout(data)["directory"] * SECTOR + 128
    first = u32_at(data, stream_entry + 116)
    with pytest.raises(CorruptFile, match="past the end of the file"):
        check_xls(patched(data, fat_offset(first + 1), 0xFFFFFFFF), Limits())


def test_a_stream_length_the_file_cannot_hold_is_refused():
    data = h.xls_with_cells(price_rows(300))
    stream_entry = SECTOR + layout(data)["directory"] * SECTOR + 128
    with pytest.raises(CorruptFile, match=r"claims 4,000,000,000 bytes for stream"):
        check_xls(patched(data, stream_entry + 120, 4_000_000_000), Limits())


def test_a_mini_stream_chain_that_loops_is_refused():
    data = h.xls_with_cells(price_rows(2))  # under 4096 bytes: in the mini stream
    assert u32_at(data, 64) == 1  # one mini FAT sector
    minifat = SECTOR + u32_at(data, 60) * SECTOR
    with pytest.raises(CorruptFile, match=r"loops \(mini sector"):
        check_xls(patched(data, minifat + 2 * 4, 0), Limits())


def test_a_difat_chain_that_loops_is_refused():
    data = h.xls_with_cells(price_rows(2))
    # A DIFAT sector whose last entry names itself: reuse the mini FAT's sector.
    minifat = u32_at(data, 60)
    looped = patched(data, 68, minifat)
    looped = patched(looped, SECTOR + minifat * SECTOR + SECTOR - 4, minifat)
    with pytest.raises(CorruptFile, match=r"DIFAT chain loops"):
        check_xls(looped, Limits())


def test_a_header_claiming_a_huge_fat_is_refused():
    data = h.xls_with_cells(price_rows(2))
    with pytest.raises(CorruptFile, match="for its FAT"):
        check_xls(patched(data, 44, 0x10000000), Limits())


def test_a_header_that_makes_calamine_reserve_a_huge_difat_is_refused():
    """Calamine sizes its DIFAT from the u32 at offset 62 (half of two other fields)."""
    data = h.xls_with_cells(price_rows(2))
    with pytest.raises(WorkbookRefused, match="DIFAT of 4,294,967,295 entries"):
        check_xls(patched(data, 62, 0xFFFFFFFF), Limits())


def test_a_truncated_compound_file_is_a_damaged_workbook():
    data = h.xls_with_cells(price_rows(300))
    with pytest.raises(CorruptFile):
        check_xls(data[: len(data) // 2], Limits())
