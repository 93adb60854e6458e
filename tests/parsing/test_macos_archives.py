"""Archives made on macOS: decomposed (NFD) names and the metadata Finder adds."""

from __future__ import annotations

import gzip
import unicodedata

from pricefeed.parsing import Limits, expand
from pricefeed.parsing.archives import is_macos_metadata

from . import builders as b

CSV = "Артикул;Цена\nA-1;10\n".encode("cp1251")
NAME = "Прайс-лист май.csv"  # "й": one code point in NFC, "и" and a breve in NFD


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_decomposed_names_come_back_composed():
    assert nfd(NAME) != NAME
    data = b.zip_of({nfd(f"Прайсы/{NAME}"): CSV})
    (member,) = expand(data, "prices.zip", Limits())
    assert member.path == f"Прайсы/{NAME}"


def test_decomposed_names_in_a_tar_come_back_composed():
    tar = b.tar_of({nfd(NAME): CSV})
    assert [m.path for m in expand(tar, "prices.tar", Limits())] == [NAME]


def test_a_gzip_named_after_a_decomposed_attachment_name_is_composed():
    gz = gzip.compress(CSV, mtime=0)  # no name in the header: named after the attachment
    assert [m.path for m in expand(gz, nfd(NAME) + ".gz", Limits())] == [NAME]


def test_macos_metadata_is_skipped_and_listed():
    data = b.zip_of(
        {
            nfd(NAME): CSV,
            "__MACOSX/": b"",
            f"__MACOSX/._{nfd(NAME)}": b"\x00\x05\x16\x07AppleDouble",
            "._другой.xlsx": b"\x00\x05\x16\x07",
            "Прайсы/.DS_Store": b"Bud1",
        }
    )
    skipped: list[str] = []
    members = expand(data, "prices.zip", Limits(), skipped=skipped)
    assert [m.path for m in members] == [NAME]
    assert skipped == [f"__MACOSX/._{NAME}", "._другой.xlsx", "Прайсы/.DS_Store"]


def test_macos_metadata_in_a_tar_and_in_a_nested_zip_is_skipped():
    inner = b.zip_of({NAME: CSV, f"__MACOSX/._{NAME}": b"\x00\x05\x16\x07"})
    tar = b.tar_of({"inner.zip": inner, f"._{NAME}": b"\x00\x05\x16\x07"})
    skipped: list[str] = []
    members = expand(tar, "prices.tar", Limits(), skipped=skipped)
    assert [m.path for m in members] == [f"inner.zip/{NAME}"]
    assert skipped == [f"._{NAME}", f"inner.zip/__MACOSX/._{NAME}"]


def test_skipped_metadata_does_not_count_against_the_files_taken():
    data = b.zip_of({NAME: CSV, f"__MACOSX/._{NAME}": b"\x00\x05\x16\x07"})
    assert len(expand(data, "prices.zip", Limits(), max_files=1)) == 1


def test_what_counts_as_macos_metadata():
    assert is_macos_metadata("__MACOSX/._a.xlsx")
    assert is_macos_metadata("__MACOSX/dir/a.xlsx")
    assert is_macos_metadata("dir/._a.xlsx")
    assert is_macos_metadata(".DS_Store")
    assert not is_macos_metadata("__MACOSX")  # a file of that name is a file
    assert not is_macos_metadata("dir/a._b.xlsx")
    assert not is_macos_metadata("Прайс.xlsx")
