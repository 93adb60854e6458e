"""Group headings and totals rows are no items and no row errors; they are counted."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pricefeed.parsing import parse

from . import builders as b

D = Decimal
HEADER = ["Артикул", "Наименование", "Цена", "Остаток"]


def test_numbered_headings_merged_across_the_row_are_counted_not_errors():
    rows = [
        HEADER,
        ["1. Электроинструмент"],
        ["1.1. Дрели и перфораторы"],
        ["A-1", "Дрель ударная", 4990, 3],
        ["1.2. Шуруповёрты 12-18 В"],
        ["A-2", "Шуруповёрт", 3590, 0],
        ["2) Сверла"],
        ["IV. Расходники"],
        ["Раздел 5. Крепёж"],
        ["A-3", "Сверло 6 мм", 120, 50],
    ]
    merges = ("A2:D2", "A3:D3", "A5:D5", "A7:D7", "A8:D8", "A9:D9")
    result = parse(b.xlsx(rows, merges=merges))
    assert [r[1] for r in result.rows] == ["A-1", "A-2", "A-3"]
    assert result.errors == []
    assert (result.rows_total, result.skipped_headings, result.skipped_totals) == (3, 6, 0)
    assert result.skipped_rows == 6


def test_headings_in_the_name_column_and_split_from_their_number():
    text = (
        "Артикул;Наименование;Цена\n"
        ";1.1. Дрели и перфораторы;\n"
        "A-1;Дрель;4 990,00\n"
        "1.2.;Шуруповёрты;\n"
        "A-2;Шуруповёрт;3 590,00\n"
        "3;Сверла по металлу 1-10 мм;\n"
        "Сверла по бетону 4-12 мм;;\n"
    )
    result = parse(text.encode("cp1251"))
    assert [r[1] for r in result.rows] == ["A-1", "A-2"]
    # "3" beside a name is an item's code, not an outline number: a row error.
    assert result.errors == [(6, "price is missing")]
    assert result.skipped_headings == 3


def test_a_heading_repeated_in_every_cell_of_a_merged_row_is_a_heading():
    # Some exports write a merged cell's text into every cell it spans.
    heading = "1.1. Дрели и перфораторы"
    text = f"Артикул;Наименование;Цена\n{heading};{heading};{heading}\nA-1;Дрель;10\n"
    result = parse(text.encode())
    assert (result.rows_ok, result.errors, result.skipped_headings) == (1, [], 1)


def test_many_numbered_headings_no_longer_fail_a_file_over_its_bad_row_share():
    rows = [HEADER]
    for group in range(1, 11):
        rows.append([f"{group}.1. Группа {group}"])
        rows.append([f"A-{group}", f"Товар {group}", 100 + group, 1])
    result = parse(b.xlsx(rows))
    assert (result.rows_ok, result.rows_failed, result.skipped_headings) == (10, 0, 10)


@pytest.mark.parametrize(
    "row",
    [
        ["Итого", None, None, None, 15990],  # the sum past the price column
        ["ИТОГО:", None, None, 53],
        [None, "Итого по разделу", 8580, None],  # the sum in the price column, no sku
        ["Всего позиций: 3", None, None, None],
        [None, "Всего", None, None, 15990],
        ["Grand total", None, None, None, 15990],
        ["Итого с НДС", None, None, None, 19188],
        ["Total", None, None, None, 15990],
    ],
)
def test_totals_rows_are_counted_not_errors(row):
    rows = [[*HEADER, "Сумма"], ["A-1", "Дрель", 4990, 1, 4990], row]
    result = parse(b.xlsx(rows))
    assert [r[1] for r in result.rows] == ["A-1"]
    assert result.errors == []
    assert (result.skipped_totals, result.skipped_headings) == (1, 0)


def test_items_that_only_look_like_headings_or_totals_stay_row_errors():
    text = (
        "Артикул;Наименование;Цена;Остаток\n"
        "A-1;Дрель;10;1\n"
        "A-17\n"  # a lone code: an item without a price
        "A-18;Всего лишь дрель;;2\n"  # starts with "Всего", but has a sku and no price
        ";Всего лишь дрель;12;\n"  # an item without a sku, not a total
        "1.5;Дрель 2;;3\n"  # an outline-like code, but a quantity too: an item
    )
    result = parse(text.encode())
    assert result.errors == [
        (3, "price is missing"),
        (4, "price is missing"),
        (5, "sku is missing"),
        (6, "price is missing"),
    ]
    assert (result.skipped_headings, result.skipped_totals) == (0, 0)


def test_totals_in_a_csv_with_the_sum_in_the_price_column():
    text = (
        "Артикул;Наименование;Цена\n"
        "A-1;Дрель;4 990,00\n"
        ";Итого по разделу 1.1:;4 990,00\n"
        "Итого;;\n"
        "Всего;;по запросу\n"
    )
    result = parse(text.encode("cp1251"))
    assert (result.rows_ok, result.errors, result.skipped_totals) == (1, [], 3)
