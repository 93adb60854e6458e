"""Hostile input: each attack is refused, with a reason an operator can read, before it
costs more than its cap, and without a single byte written to the filesystem."""

from __future__ import annotations

import time

import pytest

from pricefeed.parsing import (
    ArchiveRefused,
    ArchiveTooLarge,
    FileTooLarge,
    Limits,
    OverlappingEntries,
    SheetTooLarge,
    UnsafeEntryName,
    XmlRefused,
    check_xml_defences,
    expand,
    parse,
)

from . import builders as b

CSV = "Артикул;Цена\nA-1;10\n".encode()
MiB = 2**20


def refused(no_writes, exc_type, call, *args):
    """Run ``call(*args)`` with writes forbidden; return the refusal's message."""
    started = time.monotonic()
    with no_writes(), pytest.raises(exc_type) as exc:
        call(*args)
    assert time.monotonic() - started < 20
    message = str(exc.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


# --- zip and gzip bombs -------------------------------------------------------------


def test_high_ratio_member_is_refused_early(no_writes):
    data = b.zip_of_zeros("zeros.csv", 100 * MiB)
    assert len(data) < MiB
    message = refused(no_writes, ArchiveTooLarge, expand, data, "bomb.zip", Limits())
    assert message.startswith("entry 'zeros.csv' inflates more than 200x its compressed size")
    assert "zip bomb" in message


def test_member_over_the_file_cap_is_refused_even_at_a_modest_ratio(no_writes):
    data = b.zip_of_zeros("zeros.csv", 8 * MiB)
    limits = Limits(max_file_bytes=4 * MiB, max_ratio=100_000)
    message = refused(no_writes, ArchiveTooLarge, expand, data, "a.zip", limits)
    assert message == "entry 'zeros.csv' inflates to more than 4 MiB"


def test_total_inflated_over_all_members_is_capped(no_writes):
    data = b.zip_of({f"{i}.csv": CSV * 40000 for i in range(4)})  # ~1 MB each
    limits = Limits(max_total_inflated=3 * MiB, max_ratio=100_000)
    message = refused(no_writes, ArchiveTooLarge, expand, data, "a.zip", limits)
    assert "the attachment inflates to more than 3 MiB in all" in message


def test_overlapping_entry_zip_bomb_is_refused_before_inflating(no_writes):
    data = b.overlapping_zip(copies=500)
    message = refused(no_writes, OverlappingEntries, expand, data, "bomb.zip", Limits())
    assert "overlaps another entry's data" in message
    assert isinstance(OverlappingEntries(""), ArchiveRefused)


def test_gzip_bomb_is_refused(no_writes):
    data = b.gzip_of_zeros(100 * MiB)
    message = refused(no_writes, ArchiveTooLarge, expand, data, "prices.csv.gz", Limits())
    assert "inflates more than 200x" in message


def test_gzip_over_the_total_cap_at_a_modest_ratio(no_writes):
    data = b.gzip_of_zeros(8 * MiB)
    limits = Limits(max_total_inflated=4 * MiB, max_ratio=100_000)
    message = refused(no_writes, ArchiveTooLarge, expand, data, "x.gz", limits)
    assert "inflates to more than 4 MiB in all" in message


def test_attachment_over_the_file_cap(no_writes):
    message = refused(
        no_writes, FileTooLarge, expand, b"x" * 2000, "a.csv", Limits(max_file_bytes=1000)
    )
    assert message == "attachment is 2,000 bytes, more than 1,000 bytes"
    refused(no_writes, FileTooLarge, parse, b"x" * 2000, None, Limits(max_file_bytes=1000))


# --- names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../evil.csv", "climbs out of the archive"),
        ("prices/../../evil.csv", "climbs out of the archive"),
        ("..\\..\\evil.csv", "climbs out of the archive"),
        ("/etc/evil.csv", "absolute path"),
        ("\\\\server\\share\\evil.csv", "absolute path"),
        ("C:\\evil.csv", "names a drive"),
        ("c:/evil.csv", "names a drive"),
    ],
)
def test_zip_slip_names_refuse_the_archive(no_writes, name, why):
    data = b.zip_of({"ok.csv": CSV, name: CSV})
    message = refused(no_writes, UnsafeEntryName, expand, data, "a.zip", Limits())
    assert why in message
    assert repr(name) in message


def test_symlink_entries_refuse_the_archive(no_writes):
    data = b.zip_with_symlink("prices.csv", "/etc/passwd")
    message = refused(no_writes, UnsafeEntryName, expand, data, "a.zip", Limits())
    assert message == "archive 'attachment': entry 'prices.csv' is a symbolic link"


def test_tar_links_and_climbing_names_are_refused(no_writes):
    linked = b.tar_of({"a.csv": CSV}, symlink=("b.csv", "/etc/passwd"))
    assert "is a link" in refused(no_writes, UnsafeEntryName, expand, linked, "a.tar", Limits())
    climbing = b.tar_of({"../a.csv": CSV})
    assert "'..'" in refused(no_writes, UnsafeEntryName, expand, climbing, "a.tar", Limits())


# --- XML bombs and external entities ------------------------------------------------

LAUGHS = (
    '<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)
    )
    + "]>"
)
XXE = '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'


def _sheet_with(prolog: str, cell: str) -> str:
    return b.sheet_xml([["Артикул", "Цена"], [cell, 1]], prolog=prolog)


def _sst_with(prolog: str, text: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>{prolog}'
        f'<sst xmlns="{b.MAIN_NS}" count="1" uniqueCount="1"><si><t>{text}</t></si></sst>'
    )


@pytest.mark.parametrize(("prolog", "entity"), [(LAUGHS, "&lol9;"), (XXE, "&xxe;")])
def test_billion_laughs_and_xxe_in_sheet_xml_are_refused(no_writes, prolog, entity):
    data = b.handmade_xlsx(_sheet_with(prolog, entity))
    message = refused(no_writes, XmlRefused, parse, data)
    assert message.startswith("workbook part 'xl/worksheets/sheet1.xml' declares a DTD")
    assert "XML bomb" in message


@pytest.mark.parametrize(("prolog", "entity"), [(LAUGHS, "&lol9;"), (XXE, "&xxe;")])
def test_billion_laughs_and_xxe_in_shared_strings_are_refused(no_writes, prolog, entity):
    sheet = (
        f'<?xml version="1.0"?><worksheet xmlns="{b.MAIN_NS}"><sheetData>'
        '<row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData></worksheet>'
    )
    data = b.handmade_xlsx(sheet, shared_strings=_sst_with(prolog, entity))
    message = refused(no_writes, XmlRefused, parse, data)
    assert "workbook part 'xl/sharedStrings.xml' declares a DTD" in message


def test_a_dtd_hidden_behind_a_long_comment_is_refused(no_writes):
    prolog = "<!--" + "x" * 70000 + "-->" + XXE
    data = b.handmade_xlsx(_sheet_with(prolog, "&xxe;"))
    message = refused(no_writes, XmlRefused, parse, data)
    assert "XML prolog longer than" in message


def test_xlsx_zip_bomb_is_refused_before_calamine(no_writes):
    huge_sheet = b.sheet_xml([["Артикул", "Цена"]]).replace(
        "<sheetData>", "<sheetData>" + " " * (300 * MiB // 10)
    )
    data = b.handmade_xlsx(huge_sheet)
    message = refused(no_writes, ArchiveTooLarge, parse, data)
    assert "workbook part 'xl/worksheets/sheet1.xml' inflates more than 200x" in message


# --- memory bombs aimed at calamine (measured: it aborts the process) ---------------


def test_far_apart_cells_are_refused_before_calamine_allocates_them(no_writes):
    sheet = (
        f'<?xml version="1.0"?><worksheet xmlns="{b.MAIN_NS}"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>Артикул</t></is></c></row>'
        '<row r="20000"><c r="XFD20000"><v>1</v></c></row></sheetData></worksheet>'
    )
    message = refused(no_writes, SheetTooLarge, parse, b.handmade_xlsx(sheet))
    assert "20,001 rows x 16,385 columns" in message


@pytest.mark.parametrize(
    "cells",
    [
        '<row r="1"><c r="a1"><v>1</v></c></row><row r="2"><c r="zzz9000"><v>1</v></c></row>',
        (
            '<row r="1"><c t="n" r="A1"><v>1</v></c></row>'
            '<row r="9000"><c r="AAAA9000"><v>1</v></c></row>'
        ),
        '<row r="1"><c r="A1"><v>1</v></c></row><row r="2"><c r="ZZ0001048576"><v>1</v></c></row>',
        '<x:row r="900000"><x:c r="ZZ900000"><x:v>1</x:v></x:c></x:row>',
        # calamine places a cell by the last of repeated r attributes
        '<row r="1"><c r="A1"><v>1</v></c></row>'
        '<row r="2"><c r="A2" r="XFD20000"><v>1</v></c></row>',
        '<row r="1"><c r="A1"><v>1</v></c></row><row r="2"><c r="A2"\n r="XFD20000"/></row>',
    ],
)
def test_unusual_cell_references_are_measured_exactly(no_writes, cells):
    sheet = (
        f'<?xml version="1.0"?><worksheet xmlns="{b.MAIN_NS}" xmlns:x="{b.MAIN_NS}">'
        f"<sheetData>{cells}</sheetData></worksheet>"
    )
    refused(no_writes, SheetTooLarge, parse, b.handmade_xlsx(sheet))


def test_rless_cells_are_counted_as_calamine_places_them(no_writes):
    row = "<row>" + "<c><v>1</v></c>" * 2000 + "</row>"
    sheet = (
        f'<?xml version="1.0"?><worksheet xmlns="{b.MAIN_NS}"><sheetData>{row}'
        '<row r="999999"><c r="A999999"><v>1</v></c></row></sheetData></worksheet>'
    )
    refused(no_writes, SheetTooLarge, parse, b.handmade_xlsx(sheet))


def test_a_wide_ordinary_sheet_passes_the_exact_measure():
    header = ["Артикул", "Цена"] + [f"Поле {i}" for i in range(40)]
    rows = [header] + [[f"A-{i}", i] + [i] * 40 for i in range(1, 200)]
    result = parse(b.xlsx(rows))
    assert result.rows_total == 199


def test_a_shared_strings_table_claiming_billions_of_strings_is_refused(no_writes):
    sst = (
        f'<?xml version="1.0"?><sst xmlns="{b.MAIN_NS}" count="1" '
        'uniqueCount="2000000000"><si><t>x</t></si></sst>'
    )
    sheet = b.sheet_xml([["Артикул", "Цена"], ["A", 1]])
    message = refused(no_writes, XmlRefused, parse, b.handmade_xlsx(sheet, shared_strings=sst))
    assert "claims 2,000,000,000 shared strings" in message


# --- defences of the other XML readers in the project -------------------------------


def test_openpyxl_parses_through_defusedxml():
    assert check_xml_defences() == []


def test_check_xml_defences_reports_an_unguarded_openpyxl(monkeypatch):
    from xml.etree.ElementTree import fromstring

    import openpyxl
    from openpyxl.xml import functions

    monkeypatch.setattr(openpyxl, "DEFUSEDXML", False)
    monkeypatch.setattr(functions, "fromstring", fromstring)
    problems = check_xml_defences()
    assert any("DEFUSEDXML is False" in p for p in problems)
    assert any("expands XML entities" in p for p in problems)
