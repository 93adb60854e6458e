from __future__ import annotations

from decimal import Decimal

import pytest

from devkit.hostile_files import tar_gz_gnu_longname, tar_gz_pax_bomb, tar_header
from pricefeed.parsing import (
    ArchiveRefused,
    CorruptFile,
    Limits,
    Member,
    NestingTooDeep,
    TarHeaderRefused,
    TooManyEntries,
    TooManyFiles,
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


# --- files per message (expand's max_files) ------------------------------------------------


def inflations(monkeypatch) -> list[str]:
    """The zip entries inflated, by label, from now on."""
    from pricefeed.parsing import archives

    seen: list[str] = []
    real = archives.member_chunks

    def counting(zf, info, label, *args, **kwargs):
        seen.append(label)
        return real(zf, info, label, *args, **kwargs)

    monkeypatch.setattr(archives, "member_chunks", counting)
    return seen


def test_more_files_than_the_caller_takes_refuse_the_archive_before_inflating_any(monkeypatch):
    data = b.zip_of({f"{i}.csv": CSV_A for i in range(5)})
    inflated = inflations(monkeypatch)
    with pytest.raises(TooManyFiles) as exc:
        expand(data, "a.zip", Limits(), max_files=4)
    assert str(exc.value) == (
        "archive 'attachment': at least 5 files, more than the 4 taken from one message"
    )
    assert isinstance(exc.value, ArchiveRefused)
    assert inflated == []
    assert len(expand(data, "a.zip", Limits(), max_files=5)) == 5


def test_files_are_counted_across_nested_archives_and_the_inner_one_is_not_inflated(
    monkeypatch,
):
    inner = b.zip_of({f"in{i}.csv": CSV_B for i in range(3)})
    data = b.zip_of({"a.csv": CSV_A, "inner.zip": inner, "b.csv": CSV_A})
    assert len(expand(data, "a.zip", Limits(), max_files=5)) == 5
    inflated = inflations(monkeypatch)
    data = b.zip_of({"a.csv": CSV_A, "inner.zip": inner, "b.csv": CSV_A, "c.csv": CSV_A})
    with pytest.raises(
        TooManyFiles, match=r"archive 'inner.zip': at least 6 files, more than .* 5"
    ):
        expand(data, "a.zip", Limits(), max_files=5)
    assert inflated == ["entry 'a.csv'", "entry 'inner.zip'"]


def test_files_in_a_tar_are_counted_from_its_headers():
    data = b.gz(b.tar_of({f"{i}.csv": CSV_A for i in range(3)}))
    assert len(expand(data, "p.tgz", Limits(), max_files=3)) == 3
    with pytest.raises(TooManyFiles, match=r"at least 3 files, more than the 2"):
        expand(data, "p.tgz", Limits(), max_files=2)


def test_a_plain_file_or_a_gzip_is_one_file():
    assert len(expand(CSV_A, "p.csv", Limits(), max_files=1)) == 1
    assert len(expand(b.gz(CSV_A), "p.csv.gz", Limits(), max_files=1)) == 1
    assert len(expand(b.zip_of({f"{i}.csv": CSV_A for i in range(50)}), "a.zip", Limits())) == 50


# --- tar headers, checked before tarfile reads them ------------------------------------------


def tarfile_never_opened(monkeypatch):
    from pricefeed.parsing import archives

    def fail(*args, **kwargs):
        raise AssertionError("tarfile was handed the archive")

    monkeypatch.setattr(archives.tarfile, "open", fail)


def test_an_80000_digit_pax_header_in_a_tiny_tar_gz_is_refused_before_tarfile_reads_it(
    monkeypatch, no_writes
):
    data = tar_gz_pax_bomb(80_000)
    assert len(data) < 512
    tarfile_never_opened(monkeypatch)
    with no_writes(), pytest.raises(TarHeaderRefused) as exc:
        expand(data, "prices.tar.gz", Limits())
    assert str(exc.value) == (
        "archive 'prices.tar': a pax extended tar header of 80,000 bytes, more than 64 KiB "
        "(the CVE-2024-6232 shape): refused"
    )
    assert isinstance(exc.value, ArchiveRefused)


def test_a_long_digit_run_under_the_size_cap_is_refused_too(monkeypatch):
    tarfile_never_opened(monkeypatch)
    with pytest.raises(TarHeaderRefused, match="a run of more than 128 digits"):
        expand(tar_gz_pax_bomb(60_000), "prices.tgz", Limits())


def test_a_malformed_pax_record_is_refused(monkeypatch):
    record = b"30 path=prices.csv\n"  # says 30 bytes, holds 19
    tar = b.tar_of({"prices.csv": CSV_A})
    data = tar_header(b"././@PaxHeader", len(record), b"x") + record.ljust(512, b"\0") + tar
    tarfile_never_opened(monkeypatch)
    with pytest.raises(TarHeaderRefused, match="malformed record at byte 0"):
        expand(data, "prices.tar", Limits())


def test_a_gnu_long_name_over_4_kib_is_refused_and_a_short_one_is_read(monkeypatch):
    (member,) = expand(tar_gz_gnu_longname(300), "prices.tar.gz", Limits())
    assert member.path == "prices.tar/" + "a" * 296 + ".csv"
    assert parse(member.data).rows_ok == 1
    tarfile_never_opened(monkeypatch)
    with pytest.raises(TarHeaderRefused, match=r"GNU long-name tar header of 10,001 bytes"):
        expand(tar_gz_gnu_longname(10_000), "prices.tar.gz", Limits())


def test_a_gnu_long_name_hidden_inside_a_member_is_checked_too(monkeypatch):
    """Every block that parses as a header is checked, wherever the headers before it
    say the members end: tarfile may be led to it by a pax size record."""
    block = tar_header(b"././@LongLink", 100_000, b"L", gnu=True)
    data = b.tar_of({"a.csv": CSV_A.ljust(512, b"\0") + block})
    tarfile_never_opened(monkeypatch)
    with pytest.raises(TarHeaderRefused, match="100,000 bytes"):
        expand(data, "prices.tar", Limits())


def test_ordinary_pax_and_gnu_tars_are_read():
    import io
    import tarfile

    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
            for name in ("Прайс опт.csv", "p" * 150 + ".csv"):
                info = tarfile.TarInfo(name)
                info.size = len(CSV_A)
                info.mtime = 1_700_000_000.25  # a pax time record with a fraction
                tf.addfile(info, io.BytesIO(CSV_A))
        members = expand(b.gz(buf.getvalue()), "prices.tgz", Limits())
        assert [m.path for m in members] == [
            "prices.tar/Прайс опт.csv",
            "prices.tar/" + "p" * 150 + ".csv",
        ]


def test_a_damaged_lzma_entry_is_a_corrupt_file_not_a_crash():
    # Found by fuzz/run.py: zipfile's LZMA reader raises lzma.LZMAError, no OSError.
    data = (
        b"PK\x03\x04?\x00\x02\x00\x0e\x00\xc5k\x81]\x0e\xc5\xcb\xd7\x19\x00\x00\x00\x16\x00"
        b"\x00\x00\x05\x00\x00\x000.csv\t\x04\x05\x00]\x00\x00\x80\x00\x01(\x12\xbc\xa07\xd8"
        b"\x05\x03!\xff\xff\xfe\xdf\xe0\x00PK\x01\x02?\x03?\x00\x02\x00\x0e\x00\xc5k\x81]\x0e"
        b"\xc5\xcb\xd7\x19\x00\x00\x00\x16\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        b"\x00\x00\x80\x01\x00\x00\x00\x000.csvPK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x003\x00"
        b"\x00\x00<\x00\x00\x00\x00\x00"
    )

    with pytest.raises(CorruptFile, match="damaged archive entry"):
        expand(data, "attachment.zip", Limits())
