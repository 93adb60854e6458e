"""Rows as suppliers really send them (tests/fixtures/price_layouts): the supplier's
code is the SKU beside the maker's article, a title row stays out of the header, group
headings become the category path, several prices, stock as text, barcodes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pricefeed.parsing import ParseOptions, parse
from pricefeed.parsing.numbers import NumberReader
from pricefeed.parsing.values import (
    AT_LEAST,
    NO,
    YES,
    CategoryPath,
    checksum_ok,
    read_barcodes,
    read_stock,
)
from tests.fixtures import price_layouts as layouts

D = Decimal


def by_sku(parsed):
    return {row[1]: (row, parsed.extra(row[0])) for row in parsed.rows}


def test_the_suppliers_code_is_the_sku_and_the_article_a_column_of_its_own():
    parsed = parse(layouts.dealer_xlsx())
    assert parsed.columns["sku"] == "Код товара"
    assert parsed.columns["article"] == "Артикул"
    rows = by_sku(parsed)
    assert set(rows) == {"K-001", "K-002", "K-003", "K-004", "K-005", "K-006"}
    assert rows["K-001"][1]["article"] == "DIN933-M8"
    # An empty article does not lose the line: the code is its SKU.
    assert rows["K-002"][1]["article"] == ""


def test_a_title_row_is_never_part_of_a_column_name():
    for data in (layouts.dealer_xlsx(), layouts.code_1c_xlsx()):
        parsed = parse(data)
        assert not any(layouts.TITLE in text for text in parsed.columns.values())
    assert parse(layouts.dealer_xlsx()).header_row == 2
    assert parse(layouts.code_1c_xlsx()).header_row == 3


def test_a_two_line_header_is_still_read_as_one():
    parsed = parse(layouts.two_line_header_xlsx())
    assert parsed.columns["price"] == "Цены Опт"
    assert parsed.columns["price.retail"] == "Цены Розница"
    row, extra = by_sku(parsed)["C-1"]
    assert row[3] == D("95.5")
    assert extra["prices"] == {"retail": {"price": "120", "currency": ""}}


def test_nested_numbered_headings_give_the_category_path():
    rows = by_sku(parse(layouts.dealer_xlsx()))
    assert rows["K-001"][1]["category"] == "Крепёж / Болты"
    assert rows["K-003"][1]["category"] == "Крепёж / Гайки"
    assert rows["K-004"][1]["category"] == "Инструмент"


def test_unnumbered_headings_each_start_a_category():
    rows = by_sku(parse(layouts.distributor_csv()))
    assert rows["100234"][1]["category"] == "Электроинструмент"
    assert rows["100300"][1]["category"] == "Расходники"
    rows = by_sku(parse(layouts.two_line_header_xlsx()))
    assert rows["A-1"][1]["category"] == "Автоматы"


def test_more_price_columns_are_kept_by_price_type():
    rows = by_sku(parse(layouts.dealer_xlsx()))
    row, extra = rows["K-001"]
    assert row[3] == D("10.5")  # the main price: the first price column
    assert extra["prices"] == {
        "retail": {"price": "14", "currency": ""},
        "rrp": {"price": "15.00", "currency": ""},
    }


def test_configured_price_columns_with_their_currency():
    options = ParseOptions(
        prices={"rrp": "РРЦ", "retail": "G"},
        price_currencies={"rrp": "USD"},
        default_currency="RUB",
    )
    parsed = parse(layouts.dealer_xlsx(), options)
    extra = by_sku(parsed)["K-004"][1]
    assert extra["prices"] == {
        "rrp": {"price": "6490", "currency": "USD"},
        "retail": {"price": "5990", "currency": "RUB"},
    }


def test_a_configured_price_column_the_table_lacks_is_a_warning():
    parsed = parse(layouts.dealer_xlsx(), ParseOptions(prices={"rrp": "МРЦ"}))
    assert parsed.rows_ok == 6
    assert any("МРЦ" in w for w in parsed.warnings)


@pytest.mark.parametrize(
    ("sku", "quantity", "kind", "text"),
    [
        ("K-001", D(50), AT_LEAST, ">50"),
        ("K-002", None, YES, "есть"),
        ("K-003", D(0), NO, "нет"),
        ("K-004", D(50), AT_LEAST, "БОЛЕЕ50"),
        ("K-005", D(10), AT_LEAST, "10-20"),
        ("K-006", None, YES, "много"),
    ],
)
def test_stock_as_text_is_a_figure_a_lower_bound_or_yes_no_with_its_text(sku, quantity, kind, text):
    row, extra = by_sku(parse(layouts.dealer_xlsx()))[sku]
    assert row[5] == quantity
    assert (extra["stock_kind"], extra["stock_text"]) == (kind, text)


def test_stock_per_warehouse():
    rows = by_sku(parse(layouts.two_line_header_xlsx()))
    assert rows["C-2"][1]["stocks"] == {
        "Остаток Москва": {"quantity": "0", "kind": NO, "text": "нет"},
        "Остаток СПб": {"quantity": None, "kind": YES, "text": "есть"},
    }
    assert rows["A-1"][1]["stocks"] == {
        "Остаток Москва": {"quantity": "12"},
        "Остаток СПб": {"quantity": "0"},
    }


def test_configured_warehouses():
    options = ParseOptions(stocks={"МСК": "Остаток Москва", "СПБ": "F"})
    extra = by_sku(parse(layouts.two_line_header_xlsx(), options))["C-1"][1]
    assert extra["stocks"] == {
        "МСК": {"quantity": "100", "kind": AT_LEAST, "text": ">100"},
        "СПБ": {"quantity": "5"},
    }


def test_two_barcodes_in_a_cell_and_an_invalid_one_kept_apart_with_a_row_warning():
    parsed = parse(layouts.dealer_xlsx())
    rows = by_sku(parsed)
    assert rows["K-001"][1]["barcodes"] == [layouts.GOOD_EAN, layouts.GOOD_EAN_2]
    assert rows["K-002"][1]["barcodes"] == []
    assert rows["K-002"][1]["barcodes_invalid"] == [layouts.BAD_EAN]
    assert rows["K-003"][1]["barcodes"] == ["0" + layouts.UPC_A]
    # The row is stored, not failed.
    assert "K-002" in rows and parsed.errors == []
    assert parsed.rows_warned == 1
    assert parsed.row_warnings[0][0] == 6 and layouts.BAD_EAN in parsed.row_warnings[0][1]


def test_a_csv_with_brand_unit_pack_and_minimum_order():
    parsed = parse(layouts.distributor_csv())
    assert parsed.columns["sku"] == "Код"
    assert parsed.columns["article"] == "Арт. производителя"
    rows = by_sku(parsed)
    row, extra = rows["100235"]
    assert row[3] == D("1200.50")
    assert extra["brand"] == "Bosch"
    assert extra["unit"] == "шт"
    assert (extra["pack"], extra["min_order"]) == (D(2), D(4))
    assert extra["barcodes"] == [layouts.GOOD_EAN_2]
    assert extra["barcodes_invalid"] == [layouts.BAD_EAN]
    assert rows["100300"][1]["prices"] == {"rrp": {"price": "55.00", "currency": ""}}


def test_without_a_code_column_the_article_is_the_sku():
    parsed = parse(layouts.article_only_csv())
    assert parsed.columns["sku"] == "Артикул"
    assert "article" not in parsed.columns
    assert [r[1] for r in parsed.rows] == ["A-1", "A-2"]
    assert parsed.extra(2) == {"brand": "Makita"}


def test_english_headers():
    parsed = parse(layouts.english_xlsx())
    assert parsed.columns["sku"] == "Item code"
    assert parsed.columns["article"] == "Part number"
    _row, extra = by_sku(parsed)["S-1"]
    assert extra["brand"] == "Makita"
    assert extra["barcodes"] == [layouts.GOOD_EAN]  # a number cell
    assert extra["min_order"] == D(2)
    assert extra["prices"] == {"rrp": {"price": "12.5", "currency": ""}}


def test_a_list_without_new_columns_has_no_extra_values():
    parsed = parse("Артикул;Наименование;Цена;Остаток\nA-1;Дрель;10;5\n".encode())
    assert parsed.extras == []
    assert parsed.extra(2) == {}


def test_extras_reach_a_sink_before_their_rows():
    seen: list[str] = []

    class Sink:
        def __call__(self, rows):
            seen.extend(f"row {r[0]}" for r in rows)

        def take_extras(self, extras):
            seen.append(f"extras {extras.first_row}+{extras.count}")

    parse(layouts.dealer_xlsx(), sink=Sink())
    assert seen[0].startswith("extras")
    assert "row 5" in seen


# --- values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "ok"),
    [
        ("4601234567893", True),
        ("4601234567890", False),
        ("96385074", True),  # EAN-8
        ("96385075", False),
        ("036000291452", True),  # UPC-A
        ("10012345678902", True),  # GTIN-14
        ("10012345678903", False),
    ],
)
def test_barcode_check_digits(code, ok):
    assert checksum_ok(code) is ok


@pytest.mark.parametrize(
    ("cell", "valid", "invalid"),
    [
        ("4601234567893, 4601234567886", ["4601234567893", "4601234567886"], []),
        ("4601234567893;4601234567886", ["4601234567893", "4601234567886"], []),
        ("4601234567893 / 4601234567886", ["4601234567893", "4601234567886"], []),
        ("4601234567893|4601234567893", ["4601234567893"], []),
        ("04601234567893", ["4601234567893"], []),  # GTIN-14 with indicator 0
        ("460123456789", [], ["460123456789"]),  # 12 digits, wrong check
        ("нет", [], ["нет"]),
        ("", [], []),
    ],
)
def test_barcodes_split_and_normalised(cell, valid, invalid):
    assert read_barcodes(cell) == (valid, invalid)


@pytest.mark.parametrize(
    ("text", "figure", "kind"),
    [
        ("12", D(12), ""),
        ("5 шт.", D(5), ""),
        (">50", D(50), AT_LEAST),
        (">= 50", D(50), AT_LEAST),
        ("более 50", D(50), AT_LEAST),
        ("БОЛЕЕ50", D(50), AT_LEAST),
        ("свыше 100", D(100), AT_LEAST),
        ("50+", D(50), AT_LEAST),
        ("10-20", D(10), AT_LEAST),
        ("от 10 до 20", D(10), AT_LEAST),
        ("есть", None, YES),
        ("Много", None, YES),
        ("в наличии", None, YES),
        ("<5", None, YES),
        ("нет", D(0), NO),
        ("-", D(0), NO),
        ("под заказ", D(0), NO),
        ("уточняйте", None, ""),
    ],
)
def test_stock_texts(text, figure, kind):
    assert read_stock(text, NumberReader("comma")) == (figure, kind)


def test_category_paths():
    path = CategoryPath()
    path.heading(["1. Крепёж"])
    path.heading(["1.1. Болты"])
    assert path.text == "Крепёж / Болты"
    path.heading(["1.1.1.", "Болты DIN 933"])  # the number in a column of its own
    assert path.text == "Крепёж / Болты / Болты DIN 933"
    path.heading(["1.2. Гайки"])
    assert path.text == "Крепёж / Гайки"
    path.heading(["2. Инструмент"])
    assert path.text == "Инструмент"
    path.heading(["Расходники", "Расходники"])  # merged and repeated
    assert path.text == "Расходники"


def long_csv(quoted: bool) -> bytes:
    q = '"' if quoted else ""
    lines = [f"{q}Код{q};Бренд;Штрихкод;Цена;РРЦ;Остаток;Остаток СПб"]
    for i in range(3000):
        stock = (">50", "12", "нет")[i % 3]
        code = layouts.GOOD_EAN if i % 2 else layouts.BAD_EAN
        lines.append(f"K-{i:05};Brand {i % 7};{code};{i},50;{i + 1},00;{stock};{i % 5}")
    return ("\n".join(lines) + "\n").encode()


def test_the_quote_free_path_reads_the_same_extra_values_as_the_row_loop():
    plain, quoted = parse(long_csv(False)), parse(long_csv(True))
    assert plain.delimiter == quoted.delimiter == ";"
    assert plain.rows == quoted.rows
    for row_number in (2, 100, 2999, 3001):
        assert plain.extra(row_number) == quoted.extra(row_number)
    extra = plain.extra(2999)  # K-02997
    assert extra["brand"] == "Brand 1"
    assert extra["barcodes"] == [layouts.GOOD_EAN]
    assert extra["prices"] == {"rrp": {"price": "2998.00", "currency": ""}}
    assert (extra["stock_kind"], extra["stock_text"]) == (AT_LEAST, ">50")
    assert extra["stocks"] == {
        "Остаток": {"quantity": "50", "kind": AT_LEAST, "text": ">50"},
        "Остаток СПб": {"quantity": "2"},
    }
    assert plain.rows_warned == quoted.rows_warned == 1500


def test_a_header_of_many_stock_columns_makes_at_most_32_warehouses():
    header = ";".join(["Код", "Цена", *(f"Остаток {i}" for i in range(200))])
    row = ";".join(["A-1", "10", *("1" for _ in range(200))])
    parsed = parse(f"{header}\n{row}\n".encode())
    assert len(parsed.extra(2)["stocks"]) == 32


def test_nul_never_reaches_a_category():
    path = CategoryPath()
    path.heading(["1. Кре\x00пёж"])
    assert path.text == "Крепёж"
