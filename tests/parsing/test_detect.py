from __future__ import annotations

import pytest

from pricefeed.parsing import UnsupportedFormat, detect_format, parse
from pricefeed.parsing.text import decode, detect_delimiter, guess_cyrillic

from . import builders as b

CSV_RU = "Артикул;Наименование;Цена\nA-1;Кабель медный;1 234,50\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b.xlsx([["Артикул", "Цена"], ["A1", 10]]), "xlsx"),
        (b.handmade_xlsx(b.sheet_xml([["a"]]), macro=True), "xlsm"),
        (b.xls([["Артикул", "Цена"], ["A1", 10]]), "xls"),
        (CSV_RU.encode("cp1251"), "csv"),
        (CSV_RU.encode("utf-8-sig"), "csv"),
        (CSV_RU.encode("utf-16"), "csv"),
        (b.zip_of({"a.csv": CSV_RU}), "zip"),
        (b.gz(CSV_RU.encode()), "gzip"),
        (b.tar_of({"a.csv": CSV_RU.encode()}), "tar"),
        (b.PDF, "pdf"),
        (b.PNG, "image"),
        (b.JPEG, "image"),
        (b"Rar!\x1a\x07\x01\x00" + b"\0" * 20, "rar"),
        (b"7z\xbc\xaf\x27\x1c" + b"\0" * 20, "7z"),
        (bytes(range(256)) * 4, "unknown"),
        (b"", "empty"),
        (b"<html><body><table><tr><td>1</td></tr></table></body></html>", "html"),
    ],
)
def test_format_is_told_by_content_not_by_name(data, expected):
    assert detect_format(data) == expected


@pytest.mark.parametrize(
    ("data", "shown"),
    [(b.PDF, "unsupported format: pdf"), (b.PNG, "unsupported format: image")],
)
def test_pdf_and_images_are_refused_with_the_format_named(data, shown):
    with pytest.raises(UnsupportedFormat) as exc:
        parse(data)
    assert str(exc.value).startswith(shown)


def test_random_binary_is_unsupported():
    with pytest.raises(UnsupportedFormat, match="unsupported format: unknown"):
        parse(bytes(range(256)) * 10)


RUSSIAN = (
    "Артикул;Наименование;Цена\n"
    "A-1;Кабель медный в двойной изоляции;1 234,50\n"
    "A-2;Розетка с заземлением белая;99,90\n"
)
CAPITALS = "АРТИКУЛ;НАИМЕНОВАНИЕ;ЦЕНА\nA-1;КАБЕЛЬ ВВГ-НГ 3Х2,5 МЕДНЫЙ;1 234,50\n"


@pytest.mark.parametrize("text", [RUSSIAN, CAPITALS])
@pytest.mark.parametrize("encoding", ["cp1251", "koi8-r"])
def test_cp1251_and_koi8r_are_told_apart_in_both_directions(text, encoding):
    data = text.encode(encoding)
    assert guess_cyrillic(data) == encoding
    decoded, found = decode(data)
    assert found == encoding
    assert decoded == text


@pytest.mark.parametrize(
    ("encoding", "reported"),
    [("utf-8", "utf-8"), ("utf-8-sig", "utf-8-sig"), ("utf-16", "utf-16")],
)
def test_unicode_text_is_decoded(encoding, reported):
    text, found = decode(RUSSIAN.encode(encoding))
    assert found == reported
    assert text == RUSSIAN


def test_a_utf8_looking_start_with_cp1251_later_is_read_as_cp1251():
    data = ("sku;price\n" + "x;1\n" * 20000).encode() + "Кабель;2\n".encode("cp1251")
    text, encoding = decode(data)
    assert encoding == "cp1251"
    assert text.endswith("Кабель;2\n")


@pytest.mark.parametrize(
    ("text", "delimiter"),
    [
        ("Артикул;Наименование;Цена\nA1;Кабель, медный;1 234,50\nA2;Провод;12,50\n", ";"),
        ('sku,name,price\nA1,"Cable, copper",1234.50\nA2,Wire,12.50\n', ","),
        ("sku\tname\tprice\nA1\tCable\t1234,50\nA2\tWire\t12,50\n", "\t"),
        ("sku|name|price\nA1|Cable|1234.50\nA2|Wire|12.50\n", "|"),
        # A title row and decimal commas must not make ',' win over ';'.
        ("Прайс-лист, цены в рублях\n\nАртикул;Цена;Остаток\nA1;1,50;2\nA2;2,50;3\n", ";"),
    ],
)
def test_delimiter_is_the_one_that_splits_lines_consistently(text, delimiter):
    assert detect_delimiter(text) == delimiter
