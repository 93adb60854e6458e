"""Reading our catalogue's files (products.loaders): each format recognised by its
content, read into checked products, and every hostile file refused with a reason, in
bounded time and memory."""

from __future__ import annotations

import random

import pytest
from django.utils import translation

from pricefeed.parsing.values import BARCODE_LENGTHS, checksum_ok, checksums_ok
from products.loaders import CatalogueRefused, Rows, load_limits, read_catalogue

from .samples import (
    BILLION_LAUGHS,
    CML_BOLT,
    CML_DELETED,
    CML_NUT,
    YML_IRON,
    YML_KETTLE,
    commerceml,
    template_csv,
    template_xlsx,
    yml,
)


def write(tmp_path, data: str | bytes, name: str = "catalogue.bin", encoding: str = "utf-8"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode(encoding))
    return path


def problems(rows) -> list[tuple[int, str, bool]]:
    return [(p.line, str(p), p.refused) for p in rows.problems]


@pytest.mark.parametrize(
    ("code", "valid"),
    [
        ("4600000000008", True),  # EAN-13
        ("4006381333931", True),
        ("4006381333932", False),
        ("96385074", True),  # EAN-8
        ("036000291452", True),  # UPC-A
        ("10614141000415", True),  # GTIN-14
        ("10614141000416", False),
    ],
)
def test_check_digits_of_every_barcode_length(code, valid):
    assert checksum_ok(code) is valid


def with_check_digit(body: str) -> str:
    total = sum((1 if i % 2 else 3) * int(d) for i, d in enumerate(reversed(body)))
    return body + str((10 - total % 10) % 10)


@pytest.mark.parametrize("length", BARCODE_LENGTHS)
def test_check_digits_of_many_codes_at_once_as_one_at_a_time(length):
    rnd = random.Random(length)
    right = [
        with_check_digit(str(rnd.randrange(10 ** (length - 1))).zfill(length - 1))
        for _ in range(500)
    ]
    assert all(map(checksum_ok, right)) and checksums_ok(right, length)
    assert checksums_ok([], length)
    for _ in range(2000):
        codes = ["".join(rnd.choices("0123456789", k=length)) for _ in range(rnd.randint(1, 4))]
        assert checksums_ok(codes, length) is all(map(checksum_ok, codes))


def odd_line(rnd: random.Random, i: int) -> tuple[str, ...]:
    """A template line (code, name, brand, article, barcode cell, unit, category path)
    that is plain, or has one of the things Rows.add refuses, drops or tidies."""
    code = f"P-{rnd.randrange(5000) if rnd.random() < 0.005 else i}"
    name, brand, article, unit = "Болт М8х40 оцинкованный", "Bosch", f"A{i}", "шт"
    barcode = with_check_digit(f"46{i:010d}")
    if rnd.random() < 0.2:
        barcode += "|" + with_check_digit(f"20{i:06d}"[:7])
    category = "Крепёж / Болты"
    match rnd.randrange(300):
        case 0:
            code = rnd.choice(["", "  ", " P-x", "P-y ", "P\x00z", "x" * 101])
        case 1:
            name = rnd.choice(
                ["", " ", "  Болт", "Болт  М8", "Болт\tМ8", "Болт\xa0М8", "Б ", "x" * 2001]
            )
        case 2:
            brand = rnd.choice([" Bosch", "Bosch\n", "B" * 256, "Bo\tsch", "\x00"])
        case 3:
            article, unit = rnd.choice(
                [("A-1 ", "шт"), ("A" * 256, ""), ("", " шт"), ("", "u" * 33)]
            )
        case 4:
            barcode = rnd.choice(
                [
                    "4600000000009",
                    "46000000000",
                    "4600000000008|4600000000008",
                    "4600000000008||96385074",
                    "|4600000000008",
                    "4600000000008, 96385074",
                    " 4600000000008",
                    "036000291452|10614141000415|96385074",
                    "abc",
                    "４６０００００００００００８",
                ]
            )
        case 5:
            category = "К" * 2001
    return code, name, brand, article, barcode, unit, category


@pytest.mark.parametrize("seed", range(6))
def test_lines_checked_a_chunk_at_a_time_as_one_at_a_time(seed):
    rnd = random.Random(seed)
    lines = [odd_line(rnd, i) for i in range(5000)]
    numbers = [i + 2 for i in range(len(lines))]
    one = Rows()
    for number, line in zip(numbers, lines, strict=True):
        one.add(number, *line)
    chunked = Rows()
    start = 0
    while start < len(lines):
        end = start + rnd.choice([1, 7, 64, 200, 2048])
        columns = list(zip(*lines[start:end], strict=True))
        chunked.add_chunk(numbers[start:end], *columns)
        start = end
    assert one.refused and one.flagged
    assert chunked.products == one.products
    assert problems(chunked) == problems(one)
    assert (chunked.refused, chunked.flagged) == (one.refused, one.flagged)
    assert chunked.kept_codes == one.kept_codes


def test_the_template_as_csv_with_a_bom_semicolons_barcodes_and_a_category_path(tmp_path):
    text = "\ufeff" + template_csv(
        [
            ("P-1", "Болт  М8х40 ", " Bosch", "A-1", "4600000000008|4006381333931", "шт",
             "Крепёж/ Болты"),
            ("P-2", "Гайка М8", "", "", "", "шт", ""),
        ]
    )  # fmt: skip
    rows = read_catalogue(write(tmp_path, text, "any-name.txt"))

    assert rows.format == "csv" and rows.full
    assert rows.products == [
        ("P-1", "Болт М8х40", "Bosch", "A-1", ["4600000000008", "4006381333931"], "шт",
         "Крепёж / Болты"),
        ("P-2", "Гайка М8", "", "", [], "шт", ""),
    ]  # fmt: skip
    assert rows.problems == []


def test_the_template_with_commas_russian_column_names_in_windows_1251(tmp_path):
    text = template_csv(
        [("P-1", "Кабель ВВГ", "Кабэкс", "", "", "м", "Электрика")],
        header="Код,Наименование,Бренд,Артикул,Штрихкод,Ед.,Категория",
        sep=",",
    )
    rows = read_catalogue(write(tmp_path, text, encoding="cp1251"))

    assert rows.products == [("P-1", "Кабель ВВГ", "Кабэкс", "", [], "м", "Электрика")]
    assert rows.notes  # it says it read the file as Windows-1251


def test_refused_lines_and_dropped_barcodes_say_which_line_and_why(tmp_path):
    text = template_csv(
        [
            ("P-1", "Болт", "", "", "4600000000009|12345", "", ""),
            ("P-1", "Болт ещё раз", "", "", "", "", ""),
            ("", "Без кода", "", "", "", "", ""),
            ("P-3", "  ", "", "", "", "", ""),
            ("P-4", "x" * 3000, "", "", "", "", ""),
        ]
    )
    rows = read_catalogue(write(tmp_path, text))

    assert [p[0] for p in rows.products] == ["P-1"]
    assert rows.products[0][4] == []  # both barcodes dropped, the product kept
    assert problems(rows) == [
        (2, "barcode 4600000000009 dropped: wrong check digit", False),
        (2, "barcode 12345 dropped: not 8, 12, 13 or 14 digits", False),
        (3, "own code P-1 is already on line 2", True),
        (4, "no own code", True),
        (5, "no name", True),
        (6, "name is longer than 2000 characters", True),
    ]
    assert (rows.refused, rows.flagged) == (4, 2)
    # Codes of refused lines are in the file: a full reload does not retire them.
    assert rows.kept_codes == {"P-1", "P-3", "P-4"}


def test_a_long_file_says_which_line_past_blank_lines_and_quoted_line_breaks(tmp_path):
    """Lines are checked in chunks of thousands: the numbers are still the file's."""
    header = "own_code;name;brand;article;barcode;unit;category"
    lines = [header, "", 'P-0;"Болт\nМ8";;;;шт;']  # lines 1-4: the name spans two
    lines += [f"P-{i};Болт {i};;;;шт;" for i in range(1, 3001)]  # lines 5-3004
    lines[2504] = ";;;;;;"  # line 2506: no cell at all, skipped like a blank line
    lines += ["P-7;Болт ещё раз;;;;шт;", "P-9000;Гайка;;;4600000000009;шт;"]
    rows = read_catalogue(write(tmp_path, "\n".join(lines) + "\n"))

    assert rows.count == 3001
    assert rows.products[0][1] == "Болт М8"
    assert problems(rows) == [
        (3005, "own code P-7 is already on line 11", True),
        (3006, "barcode 4600000000009 dropped: wrong check digit", False),
    ]


def test_reasons_are_given_in_russian_to_russian_operators(tmp_path):
    text = template_csv(
        [("", "Без кода", "", "", "", "", ""), ("P-1", "Болт", "", "", "1", "", "")]
    )
    with translation.override("ru"):
        rows = read_catalogue(write(tmp_path, text))
        assert [str(p) for p in rows.problems] == [
            "нет нашего кода",
            "штрихкод 1 отброшен: не 8, 12, 13 или 14 цифр",
        ]


def test_a_file_without_our_header_is_refused(tmp_path):
    with pytest.raises(CatalogueRefused, match="no header row of our template"):
        read_catalogue(write(tmp_path, "sku;price\nA;1\n"))


def test_the_template_as_xlsx_numbers_read_as_excel_shows_them(tmp_path):
    data = template_xlsx(
        [
            ["P-1", "Болт М8х40", "Bosch", "A-1", 4600000000008, "шт", "Крепёж / Болты"],
            [None, None, None, None, None, None, None],
            [1002, "Гайка", None, None, "4006381333931|96385074", None, None],
        ]
    )
    rows = read_catalogue(write(tmp_path, data, "catalogue.csv"))  # the name does not matter

    assert rows.format == "xlsx"
    assert rows.products == [
        ("P-1", "Болт М8х40", "Bosch", "A-1", ["4600000000008"], "шт", "Крепёж / Болты"),
        ("1002", "Гайка", "", "", ["4006381333931", "96385074"], "", ""),
    ]


def test_commerceml_groups_make_the_category_path_and_the_maker_the_brand(tmp_path):
    path = write(tmp_path, commerceml(CML_BOLT + CML_NUT + CML_DELETED), "import.xml")
    rows = read_catalogue(path)

    assert rows.format == "commerceml" and rows.full
    assert rows.products == [
        ("bd72d8f9-55bc-11d9-848a-00112f43529a", "Болт М8х40 оцинкованный", "Bosch",
         "DIN933-M8x40", ["4600000000008"], "шт", "Крепёж / Болты"),
        ("bd72d8fa-55bc-11d9-848a-00112f43529a", "Гайка М8", "Kreps", "DIN934-M8", [], "шт",
         "Крепёж"),
    ]  # fmt: skip
    assert rows.deleted_codes == ["bd72d8fb-55bc-11d9-848a-00112f43529a"]


@pytest.mark.parametrize(("own_code", "codes"), [
    ("article", ["DIN933-M8x40", "DIN934-M8"]),
    ("code", ["00-00001234", "00-00001235"]),
])  # fmt: skip
def test_commerceml_own_code_from_the_article_or_1cs_code(tmp_path, own_code, codes):
    path = write(tmp_path, commerceml(CML_BOLT + CML_NUT, namespace=False))
    rows = read_catalogue(path, own_code=own_code)
    assert [p[0] for p in rows.products] == codes


def test_a_commerceml_file_of_changes_only_is_not_a_full_catalogue(tmp_path):
    rows = read_catalogue(write(tmp_path, commerceml(CML_NUT, only_changes=True)))
    assert not rows.full and len(rows.products) == 1


def test_an_offers_xml_without_offers_is_refused(tmp_path):
    offers = (
        '<?xml version="1.0" encoding="UTF-8"?><КоммерческаяИнформация ВерсияСхемы="2.05">'
        "<ПакетПредложений><Предложения/></ПакетПредложений></КоммерческаяИнформация>"
    )
    with pytest.raises(CatalogueRefused, match=r"holds no offers"):
        read_catalogue(write(tmp_path, offers))


@pytest.mark.parametrize("encoding", ["UTF-8", "windows-1251"])
def test_yml_offers_with_their_category_path_and_every_barcode(tmp_path, encoding):
    path = write(tmp_path, yml(YML_KETTLE + YML_IRON, encoding=encoding), encoding=encoding)
    rows = read_catalogue(path)

    assert rows.format == "yml" and rows.full
    assert rows.products == [
        ("12346", "Чайник электрический Bosch TWK 7203", "Bosch", "TWK7203",
         ["4600000000008", "4006381333931"], "", "Бытовая техника / Мелкая техника для кухни"),
        ("12347", "Утюг Philips GC1905", "Philips", "", [], "", "Бытовая техника"),
    ]  # fmt: skip


# -- hostile files ------------------------------------------------------------------------

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE КоммерческаяИнформация [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<КоммерческаяИнформация><Каталог><Товары><Товар><Ид>1</Ид><Наименование>&xxe;</Наименование>
</Товар></Товары></Каталог></КоммерческаяИнформация>
"""


@pytest.mark.parametrize("text", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["laughs", "xxe"])
def test_xml_that_declares_entities_is_refused(tmp_path, text):
    with pytest.raises(CatalogueRefused, match="declares entities"):
        read_catalogue(write(tmp_path, text))


def test_deep_nesting_is_refused_at_the_depth_limit(tmp_path):
    text = "<yml_catalog>" + "<a>" * 100_000 + "</a>" * 100_000 + "</yml_catalog>"
    with pytest.raises(CatalogueRefused, match="nested deeper than 64 levels"):
        read_catalogue(write(tmp_path, text))


@pytest.mark.parametrize("size", [5_000, 3_000_000], ids=["parsed", "never-closed"])
def test_a_huge_attribute_is_refused(tmp_path, size):
    # A value past the limit once parsed, and one so long that expat would hold it
    # whole before any callback: refused by the bytes fed without one.
    text = f'<yml_catalog><shop><offers><offer id="{"9" * size}"><name>x</name></offer>'
    text += "</offers></shop></yml_catalog>"
    with pytest.raises(CatalogueRefused, match="longer than 1000 characters"):
        read_catalogue(write(tmp_path, text), limits=load_limits(max_value_chars=1000))


def test_a_huge_text_is_refused_as_it_arrives(tmp_path):
    text = "<yml_catalog><shop><offers><offer id='1'><name>" + "я" * 3_000_000
    with pytest.raises(CatalogueRefused, match="longer than 1000 characters"):
        read_catalogue(write(tmp_path, text), limits=load_limits(max_value_chars=1000))


def test_elements_past_the_limit_are_refused(tmp_path):
    with pytest.raises(CatalogueRefused, match="more than 50 XML elements"):
        read_catalogue(write(tmp_path, yml(YML_IRON * 10)), limits=load_limits(max_elements=50))


def test_products_past_the_limit_are_refused(tmp_path):
    text = template_csv([(f"P-{i}", "Болт", "", "", "", "", "") for i in range(20)])
    with pytest.raises(CatalogueRefused, match="more than 10 products"):
        read_catalogue(write(tmp_path, text), limits=load_limits(max_rows=10))


def test_a_file_over_the_size_limit_is_not_opened(tmp_path):
    with pytest.raises(CatalogueRefused, match="over the 100-byte limit"):
        read_catalogue(write(tmp_path, "x" * 101), limits=load_limits(max_file_bytes=100))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "the file is empty"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100, "save it as xlsx or CSV"),
        (b'<?xml version="1.0"?><catalog/>', "neither CommerceML"),
        (b"<yml_catalog><shop><offers><offer id='1'>", "not well-formed XML"),
        (b"PK\x03\x04 not a zip", "workbook|zip|damaged|corrupt"),
    ],
)
def test_files_of_no_format_of_ours_are_refused(tmp_path, data, reason):
    with pytest.raises(CatalogueRefused, match=reason):
        read_catalogue(write(tmp_path, data))
