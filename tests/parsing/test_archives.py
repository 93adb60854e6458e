from __future__ import annotations

from decimal import Decimal

import pytest

from pricefeed.parsing import (
    Limits,
    Member,
    NestingTooDeep,
    TooManyEntries,
    UnsupportedArchive,
    expand,
    parse,
)

from . import builders as b

CSV_A = "Артикул;Цена\nA-1;10\n".encode("cp1251")
CSV_B = "Артикул;Цена\nB-1;20\n".encode("cp1251")


def test_a_plain_file_is_its_own_member():
    assert expand(CSV_A, "prices.csv", Limits()) == [Member("", CSV_A)]


def test_an_xlsx_is_a_file_not_an_archive():
    data = b.xlsx([["Артикул", "Цена"], ["A-1", 1]])
    assert expand(data, "prices.xlsx", Limits()) == [Member("", data)]


def test_zip_with_a_nested_folder_and_two_price_lists(no_writes):
    workbook = b.xlsx([["Артикул", "Цена"], ["X-1", 5]])
    data = b.zip_of(
        {
            "Прайсы/": b"",
            "Прайсы/опт/prices.csv": CSV_A,
            "Прайсы/розница.xlsx": workbook,
            "readme.txt": b"see attached",
        }
    )
    with no_writes():
        members = expand(data, "mail.zip", Limits())
    assert [m.path for m in members] == [
        "Прайсы/опт/prices.csv",
        "Прайсы/розница.xlsx",
        "readme.txt",
    ]
    assert members[0].data == CSV_A
    assert parse(members[1].data).rows[0][1] == "X-1"


def test_cp866_names_from_russian_windows_zip_tools_are_decoded():
    data = bytearray(b.zip_of({"PRICE.CSV": CSV_A}))
    # Re-encode the name as a Windows zip tool would (OEM code page, no UTF-8 flag).
    name = "ПРАЙС.CSV".encode("cp866")
    assert len(name) == len(b"PRICE.CSV")
    data = bytes(data).replace(b"PRICE.CSV", name)
    assert [m.path for m in expand(data, "a.zip", Limits())] == ["ПРАЙС.CSV"]


def test_nested_zip_in_zip_and_gzip(no_writes):
    inner = b.zip_of({"b.csv": CSV_B})
    data = b.zip_of({"a.csv": CSV_A, "inner.zip": inner, "c.csv.gz": b.gz(CSV_A)})
    with no_writes():
        members = expand(data, "mail.zip", Limits())
    assert [m.path for m in members] == ["a.csv", "inner.zip/b.csv", "c.csv.gz/c.csv"]
    assert members[1].data == CSV_B


def test_gzip_of_a_csv_takes_its_name_from_the_header_or_the_attachment():
    assert expand(b.gz(CSV_A, name="price.csv"), "x.gz", Limits()) == [Member("price.csv", CSV_A)]
    assert expand(b.gz(CSV_A), "prices.csv.gz", Limits()) == [Member("prices.csv", CSV_A)]
    member = expand(b.gz(CSV_A), "prices.csv.gz", Limits())[0]
    assert parse(member.data).rows[0][3] == Decimal(10)


def test_tar_gz():
    data = b.gz(b.tar_of({"dir/a.csv": CSV_A, "b.csv": CSV_B}))
    members = expand(data, "prices.tgz", Limits())
    assert [m.path for m in members] == ["prices.tar/dir/a.csv", "prices.tar/b.csv"]


def test_an_empty_zip_has_no_members():
    assert expand(b.zip_of({}), "empty.zip", Limits()) == []


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"Rar!\x1a\x07\x01\x00" + b"\0" * 40, "rar"),
        (b"7z\xbc\xaf\x27\x1c" + b"\0" * 40, "7z"),
        (b"BZh91AY&SY" + b"\0" * 40, "bzip2"),
    ],
)
def test_other_archives_are_unsupported_with_a_clear_reason(data, kind):
    with pytest.raises(UnsupportedArchive, match=f"unsupported archive: {kind}"):
        expand(data, "prices.bin", Limits())


def test_archives_given_to_parse_are_refused():
    with pytest.raises(UnsupportedArchive, match="expand it first"):
        parse(b.zip_of({"a.csv": CSV_A}))


def test_nesting_up_to_the_limit_is_fine_and_one_more_is_refused(no_writes):
    level3 = b.zip_of({"c.zip": b.zip_of({"d.csv": CSV_A})})
    data = b.zip_of({"b.zip": level3})
    with no_writes():
        assert [m.path for m in expand(data, "a.zip", Limits(max_depth=3))] == ["b.zip/c.zip/d.csv"]
        with pytest.raises(NestingTooDeep) as exc:
            expand(data, "a.zip", Limits(max_depth=2))
    assert str(exc.value) == "archive 'b.zip/c.zip' is nested more than 2 levels deep"


def test_entries_are_counted_over_nested_archives(no_writes):
    inner = b.zip_of({f"in{i}.csv": CSV_A for i in range(3)})
    data = b.zip_of({"a.csv": CSV_A, "b.csv": CSV_A, "inner.zip": inner})
    assert len(expand(data, "a.zip", Limits(max_entries=6))) == 5
    with no_writes(), pytest.raises(TooManyEntries) as exc:
        expand(data, "a.zip", Limits(max_entries=5))
    assert "more than 5 archive entries in all" in str(exc.value)


def test_more_entries_than_the_limit(no_writes):
    data = b.zip_of({f"{i}.csv": b"x" for i in range(1001)})
    with no_writes(), pytest.raises(TooManyEntries, match="more than 1,000 archive entries"):
        expand(data, "many.zip", Limits())


def test_encrypted_zip_entries_are_unsupported():
    data = bytearray(b.zip_of({"a.csv": CSV_A}))
    # Set the "encrypted" flag in the local and central headers, as a password tool would.
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    data[local + 6] |= 1
    data[central + 8] |= 1
    with pytest.raises(UnsupportedArchive, match="encrypted"):
        expand(bytes(data), "secret.zip", Limits())
