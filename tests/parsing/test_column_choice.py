"""Which column a field is read from: synonyms ranked by strength whatever the match
type, and a configured one- or two-letter text that is also a header."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pricefeed.parsing import MissingColumns, ParseOptions, parse

from . import builders as b

D = Decimal


def test_a_strong_synonym_by_prefix_beats_a_weak_one_matching_exactly():
    rows = [
        ["Артикул", "Название товара", "Описание", "Цена"],
        ["A-1", "Дрель ударная", "Мощная дрель для бетона", 4990],
    ]
    result = parse(b.xlsx(rows))
    assert result.columns["name"] == "Название товара"
    assert result.rows[0][2] == "Дрель ударная"


@pytest.mark.parametrize(
    ("headers", "field", "expected"),
    [
        (["Артикул", "Описание", "Наименование товара", "Цена"], "name", "Наименование товара"),
        (["Артикул", "Товар", "Краткое наименование", "Цена"], "name", "Краткое наименование"),
        (["Артикул", "Наименование", "Опт", "Цена, руб."], "price", "Цена, руб."),
        (["Код", "Артикул поставщика", "Наименование", "Цена"], "sku", "Артикул поставщика"),
        (["Артикул", "Наличие", "Остаток на складе", "Цена"], "quantity", "Остаток на складе"),
        # Of two strong synonyms the exact match still wins over a prefix.
        (["Артикул", "Кол-во в упаковке", "Количество", "Цена"], "quantity", "Количество"),
    ],
)
def test_synonyms_are_ranked_by_strength_then_match(headers, field, expected):
    rows = [headers, ["A-1", "x", "y", 10]]
    assert parse(b.xlsx(rows)).columns[field] == expected


def test_weak_synonyms_still_name_a_column_nobody_else_names():
    rows = [["Код", "Описание", "Опт"], ["A-1", "Дрель", 10]]
    result = parse(b.xlsx(rows))
    assert result.columns == {"sku": "Код", "name": "Описание", "price": "Опт"}


def test_a_two_letter_text_that_is_a_header_is_that_header():
    text = "Наименование;ID;Цена\nДрель;A-1;10\n"
    result = parse(text.encode(), ParseOptions(columns={"sku": "ID"}))
    assert result.columns["sku"] == "ID"
    assert result.rows[0][1:4] == ("A-1", "Дрель", D(10))
    # The table has no column ID (the 238th): nothing was open to doubt.
    assert result.warnings == []


def test_a_two_letter_text_with_no_such_header_is_a_column_letter():
    header = ["Наименование", "Цена", *[f"c{i}" for i in range(25)], "Код 1С"]
    row = ["Дрель", "10", *["" for _ in range(25)], "A-1"]
    text = "\n".join(";".join(r) for r in (header, row)) + "\n"
    result = parse(text.encode(), ParseOptions(columns={"sku": "AB"}))
    assert result.columns["sku"] == "AB"
    assert result.rows[0][1] == "A-1"


def test_a_letter_that_is_also_a_header_elsewhere_is_that_header_with_a_warning():
    # Size columns headed S, M, L: "L" names the header in column E, not column L.
    rows = [
        ["Артикул", "Наименование", "S", "M", "L", "Цена", *[f"c{i}" for i in range(8)]],
        ["A-1", "Футболка", 1, 2, 3, 500, *range(8)],
    ]
    result = parse(b.xlsx(rows), ParseOptions(columns={"quantity": "L"}))
    assert result.columns["quantity"] == "L"
    assert result.rows[0][5] == D(3)
    assert result.warnings == [
        "quantity is read from the column headed 'L' (column E), not from column 'L'"
    ]


def test_a_letter_past_the_table_is_refused_unless_the_header_row_has_that_text():
    options = ParseOptions(columns={"sku": "ID", "price": "C"})
    result = parse("ID;Наименование;Цена\nA-1;Дрель;10\n".encode(), options)
    assert result.rows[0][1] == "A-1"
    with pytest.raises(MissingColumns, match="column ID for sku is past the last column"):
        parse("Код;Наименование;Цена\nA-1;Дрель;10\n".encode(), options)
