from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from pricefeed.parsing import (
    EmptyFile,
    Limits,
    MissingColumns,
    NoHeaderRow,
    ParseOptions,
    SheetNotFound,
    TooManyRows,
    parse,
)

from . import builders as b

D = Decimal
HEADER = ["Артикул", "Наименование", "Цена", "Остаток"]
ROWS = [["A-1", "Кабель ВВГ 3х2,5", 1234.5, 10], ["A-2", "Розетка белая", 99.9, 0]]
CSV_TEXT = (
    "Артикул;Наименование;Цена;Остаток\nA-1;Кабель ВВГ 3х2,5;1 234,50;10\nA-2;Розетка;99,90;0\n"
)


def test_xlsx_rows_are_typed_tuples(no_writes):
    data = b.xlsx([HEADER, *ROWS])
    with no_writes():
        result = parse(data)
    assert result.format == "xlsx"
    assert result.sheet == "Прайс"
    assert result.header_row == 1
    assert result.columns == {
        "sku": "Артикул",
        "name": "Наименование",
        "price": "Цена",
        "quantity": "Остаток",
    }
    assert result.rows == [
        (2, "A-1", "Кабель ВВГ 3х2,5", D("1234.5"), "", D("10")),
        (3, "A-2", "Розетка белая", D("99.9"), "", D("0")),
    ]
    assert result.rows_total == 2
    assert result.errors == []


def test_xlsm_is_read_like_xlsx():
    sheet = b.sheet_xml([["Артикул", "Цена"], ["A-1", 10.1]])
    result = parse(b.handmade_xlsx(sheet, macro=True))
    assert result.format == "xlsm"
    assert result.rows == [(2, "A-1", "", D("10.1"), "", None)]


def test_xls_is_read_through_calamine():
    result = parse(b.xls([["Прайс-лист"], [], HEADER, *ROWS]))
    assert result.format == "xls"
    assert result.header_row == 3
    assert [r[:4] for r in result.rows] == [
        (4, "A-1", "Кабель ВВГ 3х2,5", D("1234.5")),
        (5, "A-2", "Розетка белая", D("99.9")),
    ]


@pytest.mark.parametrize(
    ("encoding", "delimiter"),
    [
        ("utf-8", ";"),
        ("utf-8-sig", ";"),
        ("cp1251", ";"),
        ("cp1251", ","),
        ("koi8-r", ";"),
        ("utf-16", "\t"),
        ("utf-8", "\t"),
        ("cp1251", "|"),
    ],
)
def test_text_tables_in_every_encoding_and_delimiter(encoding, delimiter, no_writes):
    text = CSV_TEXT
    if delimiter != ";":
        text = text.replace(";", "\x00").replace(",", ".").replace("\x00", delimiter)
        text = text.replace("1 234.50", "1 234.50")
    data = text.encode(encoding)
    with no_writes():
        result = parse(data)
    assert result.format == "csv"
    assert result.encoding == encoding
    assert result.delimiter == delimiter
    assert [(r[0], r[1], r[3], r[5]) for r in result.rows] == [
        (2, "A-1", D("1234.50"), D("10")),
        (3, "A-2", D("99.90"), D("0")),
    ]
    assert result.rows[0][2] in ("Кабель ВВГ 3х2,5", "Кабель ВВГ 3х2.5")


def test_quoted_fields_with_delimiters_and_newlines():
    data = b'sku,name,price\nA1,"Cable, copper\nred",1234.50\n'
    result = parse(data)
    assert result.rows == [(2, "A1", "Cable, copper\nred", D("1234.50"), "", None)]


def test_header_below_three_title_rows():
    rows = [["ООО «Ромашка»"], ["Прайс-лист на 01.02.2024"], ["Цены с НДС"], HEADER, *ROWS]
    result = parse(b.xlsx(rows))
    assert result.header_row == 4
    assert result.rows[0][0] == 5
    assert result.skipped_rows == 0


def test_header_in_a_table_that_starts_at_c3():
    rows = [[], [], [None, None, *HEADER], [None, None, *ROWS[0]]]
    result = parse(b.xlsx(rows))
    assert result.header_row == 3
    assert result.rows == [(4, "A-1", "Кабель ВВГ 3х2,5", D("1234.5"), "", D("10"))]


def test_column_letters_bypass_synonyms():
    rows = [["Код 1С", "Что", "Сколько стоит"], ["A-1", "Кабель", 10], ["A-2", "Провод", 12]]
    options = ParseOptions(columns={"sku": "A", "price": "C", "name": "B"})
    result = parse(b.xlsx(rows), options)
    assert result.header_row == 1  # text where the letters point: the header
    assert result.columns == {"sku": "A", "name": "B", "price": "C"}
    assert [r[:4] for r in result.rows] == [
        (2, "A-1", "Кабель", D(10)),
        (3, "A-2", "Провод", D(12)),
    ]


def test_column_letters_without_any_header_row():
    rows = [["Прайс на сегодня"], ["A-1", "Кабель", 10], ["A-2", "Провод", 12]]
    options = ParseOptions(columns={"sku": "A", "price": "C"})
    result = parse(b.xlsx(rows), options)
    assert result.header_row == 0  # no header: data from the first row with a price
    assert result.skipped_rows == 1
    assert [r[:4] for r in result.rows] == [(2, "A-1", "", D(10)), (3, "A-2", "", D(12))]


def test_column_letters_in_a_table_that_starts_at_c3():
    rows = [[], [], [None, None, *HEADER], [None, None, *ROWS[0]]]
    options = ParseOptions(columns={"price": "E"})
    result = parse(b.xlsx(rows), options)
    assert result.columns["price"] == "E"
    assert result.rows[0][3] == D("1234.5")


def test_configured_header_texts_choose_between_similar_columns():
    rows = [["Артикул", "Цена опт", "Цена розн."], ["A-1", 10, 15]]
    assert parse(b.xlsx(rows)).rows[0][3] == D(10)
    options = ParseOptions(columns={"price": "цена розн"})
    result = parse(b.xlsx(rows), options)
    assert result.columns["price"] == "Цена розн."
    assert result.rows[0][3] == D(15)


@pytest.mark.parametrize(
    ("header", "field"),
    [
        (["Арт.", "Цена, руб."], "sku"),
        (["Код товара", "Цена с НДС"], "sku"),
        (["SKU", "Price"], "sku"),
        (["Part number", "Price"], "sku"),
        (["Item code", "Стоимость"], "sku"),
        (["Article", "Опт"], "sku"),
    ],
)
def test_header_synonyms(header, field):
    result = parse(b.xlsx([header, ["A-1", 10]]))
    assert result.columns[field] == header[0]
    assert result.rows[0][1] == "A-1"


def test_a_barcode_column_is_not_the_sku():
    rows = [["Штрих-код", "Код", "Наименование", "Цена"], ["4600000000001", "A-1", "Кабель", 5]]
    result = parse(b.xlsx(rows))
    assert result.columns["sku"] == "Код"
    assert result.rows[0][1] == "A-1"


def test_merged_two_row_header_and_merged_title():
    rows = [
        ["Прайс-лист ООО «Ромашка»"],
        [],
        ["Артикул", "Наименование", "Цены", None, "Остаток"],
        [None, None, "Опт", "Розница", None],
        ["A-1", "Кабель", 10, 12, 5],
        ["A-2", "Провод", 20, 24, 0],
    ]
    data = b.xlsx(rows, merges=("A1:E1", "A3:A4", "B3:B4", "C3:D3", "E3:E4"))
    result = parse(data)
    assert result.header_row == 4
    assert result.columns["price"] == "Цены Опт"
    assert [r[:4] for r in result.rows] == [
        (5, "A-1", "Кабель", D(10)),
        (6, "A-2", "Провод", D(20)),
    ]


def test_header_merged_over_two_rows_with_blank_second_row():
    rows = [
        ["Артикул", "Наименование", "Цена"],
        [None, None, None],
        ["A-1", "Кабель", 10],
    ]
    result = parse(b.xlsx(rows, merges=("A1:A2", "B1:B2", "C1:C2")))
    assert result.header_row == 1
    assert result.rows == [(3, "A-1", "Кабель", D(10), "", None)]
    assert result.skipped_rows == 1


def test_formulas_give_their_cached_values():
    sheet = b.sheet_xml(
        [
            ["Артикул", "База", "Цена"],
            ["A-1", 10, ("B2*2", 20)],
            ["A-2", 10.1, ("B3*1", 10.1)],
        ]
    )
    result = parse(b.handmade_xlsx(sheet), ParseOptions(columns={"price": "Цена"}))
    assert [(r[1], r[3]) for r in result.rows] == [("A-1", D(20)), ("A-2", D("10.1"))]


def test_numeric_skus_lose_the_float_suffix():
    result = parse(b.xlsx([["Артикул", "Цена"], [12345, 10], [1.5, 11]]))
    assert [r[1] for r in result.rows] == ["12345", "1.5"]


def test_empty_and_section_rows_are_skipped_not_errors():
    rows = [
        HEADER,
        [None],
        ["Кабели и провода"],
        ["A-1", "Кабель", 10, 1],
        [None, "Розетки", None, None],
        ["A-2", "Розетка", 11, 2],
        [None, "Примечание: цены с НДС", "уточняйте", None],
    ]
    result = parse(b.xlsx(rows))
    assert [r[1] for r in result.rows] == ["A-1", "A-2"]
    assert result.errors == []
    assert result.rows_total == 2
    assert result.skipped_rows == 4


def test_per_row_errors_name_the_row_and_the_reason():
    text = (
        "Артикул;Наименование;Цена;Остаток\n"
        "A-1;Кабель;10;в наличии\n"
        "A-2;Провод;по запросу;5\n"
        "A-3;Щит;;3\n"
        "A-33\n"
        ";Провод без кода;1 234,00;\n"
        "A-4;Лампа;>10;много\n"
        "Артикул;Наименование;Цена;Остаток\n"
        "A-5;Автомат;12,5;>10\n"
    )
    result = parse(text.encode("cp1251"))
    assert [(r[0], r[1], r[3], r[5]) for r in result.rows] == [
        (2, "A-1", D(10), None),
        # ">10" is a lower bound: at least 10 (the text is kept: ParsedFile.extra).
        (9, "A-5", D("12.5"), D(10)),
    ]
    assert result.errors == [
        (3, "price 'по запросу' is not a number"),
        (4, "price is missing"),
        (5, "price is missing"),  # a lone code is an item, not a section title
        (6, "sku is missing"),
        (7, "price '>10' is not a number"),
    ]
    assert result.rows_total == 7
    assert result.rows_failed == 5
    assert result.skipped_rows == 1  # the repeated header row


def test_errors_kept_are_capped_but_all_are_counted():
    text = "Артикул;Цена\n" + "".join(f"A{i};нет\n" for i in range(50))
    result = parse(text.encode(), limits=Limits(max_errors=10))
    assert len(result.errors) == 10
    assert result.rows_failed == 50


def test_currency_from_cell_then_column_then_header_then_default():
    text = (
        "Артикул;Цена, руб.;Валюта\n"
        "A-1;$12.50;\n"
        "A-2;12,50;EUR\n"
        "A-3;12,50;\n"
        "A-4;1 234 ₽;USD\n"
        "A-5;€3;\n"
        "A-6;5;у.е.\n"
    )
    result = parse(text.encode(), ParseOptions(default_currency="KZT"))
    assert [(r[1], r[4]) for r in result.rows] == [
        ("A-1", "USD"),
        ("A-2", "EUR"),
        ("A-3", "RUB"),
        ("A-4", "RUB"),
        ("A-5", "EUR"),
        ("A-6", "у.е."),
    ]
    plain = parse(b"sku;price\nA1;5\n", ParseOptions(default_currency="RUB"))
    assert plain.rows[0][4] == "RUB"


def test_ambiguous_numbers_follow_the_first_unambiguous_one_in_the_file():
    text = "Артикул;Цена\nA-1;1.234\nA-2;1.500\nA-3;1 234,50\nA-4;2.000\n"
    result = parse(text.encode())
    assert [r[3] for r in result.rows] == [D(1234), D(1500), D("1234.50"), D(2000)]
    dotted = parse(b"sku;price\nA1;1,234\nA2;12.5\n")
    assert [r[3] for r in dotted.rows] == [D(1234), D("12.5")]
    comma = parse(b"sku;price\nA1;1,234\n", ParseOptions(number_format="comma"))
    assert comma.rows[0][3] == D("1.234")


def test_dates_and_booleans_in_the_price_column_are_row_errors():
    rows = [["Артикул", "Цена"], ["A-1", dt.date(2024, 1, 2)], ["A-2", True], ["A-3", 5]]
    result = parse(b.xlsx(rows))
    assert result.errors == [
        (2, "price '2024-01-02' is not a number"),
        (3, "price 'TRUE' is not a number"),
    ]
    assert [r[1] for r in result.rows] == ["A-3"]


def test_missing_columns_name_what_is_missing_and_the_header_cells_seen():
    with pytest.raises(MissingColumns) as exc:
        parse(b.xlsx([["Наименование", "Цена", "Остаток"], ["Кабель", 10, 1]]))
    message = str(exc.value)
    assert message.startswith("missing columns: sku (e.g. Код товара, Код, Артикул, SKU)")
    assert "Header row 1 has: 'Наименование', 'Цена', 'Остаток'" in message


def test_missing_price_column():
    with pytest.raises(MissingColumns, match=r"^missing columns: price \(e\.g\. Цена"):
        parse("Артикул;Наименование\nA-1;Кабель\n".encode())


def test_configured_header_text_that_is_absent_is_reported():
    data = b.xlsx([["Артикул", "Наименование", "Цена"], ["A-1", "x", 1]])
    with pytest.raises(MissingColumns, match=r"price \('Цена опт'\)"):
        parse(data, ParseOptions(columns={"price": "Цена опт"}))


def test_column_letter_past_the_table_is_reported():
    data = b.xlsx([["Артикул", "Цена"], ["A-1", 1]])
    with pytest.raises(MissingColumns, match=r"column Z for price is past the last column.*\(B\)"):
        parse(data, ParseOptions(columns={"price": "Z"}))


def test_no_header_row():
    data = "\n".join(f"строка {i};{i}" for i in range(60)).encode()
    with pytest.raises(NoHeaderRow) as exc:
        parse(data)
    assert str(exc.value).startswith("no header row in the first 50 rows")


def test_sheet_choice_by_name_and_number():
    import io

    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = "Пусто"
    first = wb.create_sheet("Опт")
    first.append(["Артикул", "Цена"])
    first.append(["A-1", 1])
    second = wb.create_sheet("Розница")
    second.append(["Артикул", "Цена"])
    second.append(["A-1", 2])
    buf = io.BytesIO()
    wb.save(buf)
    data = buf.getvalue()
    assert parse(data).sheet == "Опт"  # the first non-empty sheet
    assert parse(data, ParseOptions(sheet="розница")).rows[0][3] == D(2)
    assert parse(data, ParseOptions(sheet="3")).sheet == "Розница"
    with pytest.raises(SheetNotFound, match="sheet 'Склад' not found; the workbook has: 'Пусто'"):
        parse(data, ParseOptions(sheet="Склад"))


def test_empty_files():
    with pytest.raises(EmptyFile):
        parse(b"")
    with pytest.raises(EmptyFile, match="no non-empty sheet"):
        parse(b.xlsx([]))


def test_row_cap():
    text = "sku;price\n" + "A;1\n" * 20
    with pytest.raises(TooManyRows, match="more than 10 data rows"):
        parse(text.encode(), limits=Limits(max_rows=10))


def test_options_are_validated():
    with pytest.raises(ValueError, match="unknown column field"):
        ParseOptions(columns={"colour": "A"})
    with pytest.raises(ValueError, match="number_format"):
        ParseOptions(number_format="fr")


def test_excel_error_cells_read_as_empty():
    # calamine turns #N/A, #DIV/0! and friends into "": the row reads as a missing price.
    sheet = (
        f'<?xml version="1.0"?><worksheet xmlns="{b.MAIN_NS}"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>Артикул</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>Цена</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>X-1</t></is></c>'
        '<c r="B2" t="e"><f>1/0</f><v>#DIV/0!</v></c></row></sheetData></worksheet>'
    )
    result = parse(b.handmade_xlsx(sheet))
    assert result.errors == [(2, "price is missing")]


def test_a_repeated_header_row_is_not_an_error_but_a_lone_sku_is():
    rows = [["Артикул", "Цена"], ["A-1", 1], ["Артикул", "Цена"], ["A-2", 2], ["A-3"]]
    result = parse(b.xlsx(rows))
    assert [r[1] for r in result.rows] == ["A-1", "A-2"]
    assert result.errors == [(5, "price is missing")]
    assert result.skipped_rows == 1
