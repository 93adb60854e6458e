"""Text tables read a column at a time give exactly the rows the row loop gives."""

from __future__ import annotations

import pytest

from pricefeed.parsing import Limits, ParseOptions, TooManyRows, parse, rows

from .alike import assert_read_alike

LINES = [
    "A-1;Кабель ВВГ 3х2,5;1 234,50;10;RUB",
    "A-2; Розетка ;99,90;;руб.",
    "A-3;Выключатель;12,5;5 шт.;$",
    "A-4;Лампа;1,234;в наличии;",
    "A-5;Щит;-7;0;EUR",
    "A-6;Провод;1 000;12,5;usd",
    "",
    "Кабели и провода;;;;",
    "A-7;Автомат;по запросу;1;RUB",
    ";Без артикула;15,00;1;RUB",
    "Артикул;Наименование;Цена;Остаток;Валюта",
    "A-8;Тройник;1.234,56;3;RUB",
    "A-9;Удлинитель;1 234 руб;2;",
    "A-10;Коробка;7,25;2",
    "A-11;Гофра;3,10;4;RUB;лишняя колонка",
    "A-12;Огромная цена;100 000 000 000 000;1;RUB",
    "A-13;Огромный остаток;5;1 000 000 000 000 000;RUB",
    "A-14;Нули;000000000000001,5;1;RUB",
]


def _both(data: bytes, options: ParseOptions | None = None, chunk: int = 3):
    by_rows = parse(data, options)
    original = rows.TEXT_CHUNK
    rows.TEXT_CHUNK = chunk
    try:
        by_columns = parse(data, options)
    finally:
        rows.TEXT_CHUNK = original
    return by_rows, by_columns


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 4096])
@pytest.mark.parametrize("number_format", ["auto", "comma", "dot"])
def test_column_path_gives_the_row_loops_rows_errors_and_counts(chunk, number_format):
    head = "Прайс;;;;\nАртикул;Наименование;Цена;Остаток;Валюта\n"
    plain = "".join(f"B-{i};Товар {i};{i} {i:03d},{i % 100:02d};{i % 7};RUB\n" for i in range(40))
    data = (head + plain + "\n".join(LINES) + "\n" + plain.replace("B-", "C-")).encode()
    options = ParseOptions(number_format=number_format, default_currency="KZT")
    by_rows, by_columns = _both(data, options, chunk)
    assert_read_alike(by_columns, by_rows)


def test_files_without_name_quantity_or_currency_columns_read_alike():
    data = ("Артикул;Цена\n" + "".join(f"A-{i};{i},{i % 10}0\n" for i in range(50))).encode()
    by_rows, by_columns = _both(data, ParseOptions(default_currency="RUB"))
    assert by_columns.rows == by_rows.rows
    assert by_columns.rows[-1] == (51, "A-49", "", by_rows.rows[-1][3], "RUB", None)


def test_the_row_cap_is_met_at_the_same_row():
    data = ("Артикул;Цена\n1;1,5\n" + "".join(f"A-{i};{i},50\n" for i in range(30))).encode()
    original = rows.TEXT_CHUNK
    rows.TEXT_CHUNK = 4
    try:
        with pytest.raises(TooManyRows):
            parse(data, limits=Limits(max_rows=20))
    finally:
        rows.TEXT_CHUNK = original
    assert parse(data, limits=Limits(max_rows=31)).rows_ok == 31


def test_numbers_out_of_the_stored_range_are_a_row_error_or_no_quantity():
    data = "Артикул;Цена;Остаток\nA-1;-100000000000000;1\nA-2;99999999999999,99;1e20\n"
    for chunk in (1, 4096):
        by_rows, by_columns = _both(data.encode(), chunk=chunk)
        for parsed in (by_rows, by_columns):
            assert parsed.errors == [
                (
                    2,
                    "price '-100000000000000' is out of range "
                    "(at most 14 digits before the decimal point)",
                )
            ]
            assert [(r[1], str(r[3]), r[5]) for r in parsed.rows] == [
                ("A-2", "99999999999999.99", None)
            ]
