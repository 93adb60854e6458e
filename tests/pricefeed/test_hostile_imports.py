"""Imports of hostile files: what the parser cuts is a warning stored on the import, a
value the table cannot store is a row error, and every refusal ends the import FAILED
with a reason that names the limit and its setting."""

from __future__ import annotations

import itertools

import pytest

from devkit.hostile_files import xls_with_cells
from pricefeed.models import PriceImport, PriceItem
from pricefeed.parsing import deadline
from tests.factories import english, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue")

HEAD = "Артикул;Наименование;Цена\n"


def good_rows(count: int) -> str:
    return "".join(f"A-{i};Кабель медный {i};{i},50\n" for i in range(1, count + 1))


def import_of(mailbox, filename: str, data: bytes) -> PriceImport:
    (price_import,) = run_all(receive(mailbox, [(filename, data)]))
    return price_import


def test_cells_cut_past_max_columns_are_a_warning_on_the_import(mailbox, config):
    wide = "W-1;Провод;2,00" + ";" * 5000 + "\n"
    price_import = import_of(mailbox, "p.csv", (HEAD + good_rows(30) + wide).encode())

    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    assert price_import.rows_ok == 31
    assert english(price_import.parse_info["warnings"]) == [
        "1 row(s) have cells past column 1,024 (max_columns, setting "
        "PRICEFEED_PARSE_MAX_COLUMNS); those cells were not read (first: row 32)"
    ]
    assert PriceItem.objects.filter(price_import=price_import, sku="W-1").exists()


def test_values_the_table_cannot_store_are_row_errors_and_the_rest_is_stored(mailbox, config):
    bad = "X" * 300 + ";длинный;1,00\nN-1;плохое\x00имя;1,00\n"  # a NUL past the first 64 KB
    price_import = import_of(mailbox, "p.csv", (HEAD + good_rows(2000) + bad).encode())

    assert price_import.status == Status.PARTIAL, price_import.last_error
    assert (price_import.rows_ok, price_import.rows_failed) == (2000, 2)
    assert english(price_import.errors) == [
        {"row": 2002, "error": "sku is longer than 255 characters (300)"},
        {"row": 2003, "error": "name contains a NUL character"},
    ]
    assert PriceItem.objects.filter(price_import=price_import).count() == 2000


def test_a_mostly_utf8_file_with_a_cp1251_line_keeps_its_names(mailbox, config):
    data = (HEAD + good_rows(3000)).encode() + "B-1;Кабель;1,00\n".encode("cp1251")

    price_import = import_of(mailbox, "p.csv", data)

    assert price_import.status == Status.PARTIAL
    assert price_import.parse_info["encoding"] == "utf-8"
    assert english(price_import.errors) == [{"row": 3002, "error": "line 3,002 is not valid UTF-8"}]
    item = PriceItem.objects.get(price_import=price_import, sku="A-3000")
    assert item.name == "Кабель медный 3000"


def test_a_memory_bomb_xls_fails_the_import_with_the_limit_named(mailbox, config):
    cells: list[tuple[int, int, str | float]] = [(0, 0, "Артикул"), (0, 1, "Цена")]
    cells += [(1, 0, "A-1"), (1, 1, 10.5), (65535, 65535, "x")]

    price_import = import_of(mailbox, "p.xls", xls_with_cells(cells))

    assert (price_import.status, price_import.attempts) == (Status.FAILED, 1)
    assert "PRICEFEED_PARSE_MAX_CELLS" in price_import.last_error
    assert not PriceItem.objects.exists()


def test_a_parse_over_the_time_limit_fails_the_import_with_the_limit_named(
    mailbox, config, settings, monkeypatch
):
    settings.PRICEFEED_PARSE_MAX_SECONDS = 20
    clock = itertools.count()
    monkeypatch.setattr(deadline, "_now", lambda: next(clock))

    price_import = import_of(mailbox, "p.csv", (HEAD + good_rows(100_000)).encode())

    assert (price_import.status, price_import.attempts) == (Status.FAILED, 1)
    assert price_import.last_error.startswith(
        "reading the file took more than 20 s (max_seconds, setting "
        "PRICEFEED_PARSE_MAX_SECONDS); stopped at row "
    )
    assert not PriceItem.objects.exists()
