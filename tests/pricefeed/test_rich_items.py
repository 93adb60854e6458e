"""Rows with their extra values through a real import: the COPY with the extra columns,
the catalogue view, what a change of them does to the catalogue."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation

from core.texts import shown
from pricefeed.models import CatalogueEntry, PriceImport, PriceItem
from tests.factories import receive, run_all
from tests.fixtures import price_layouts as layouts

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue")


def items_of(price_import):
    return {i.sku: i for i in PriceItem.objects.filter(price_import=price_import)}


def test_a_dealer_list_is_stored_with_every_column(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    items = items_of(price_import)
    bolt = items["K-001"]
    assert (bolt.article, bolt.brand, bolt.unit) == ("DIN933-M8", "Bossard", "шт")
    assert bolt.barcodes == [layouts.GOOD_EAN, layouts.GOOD_EAN_2]
    assert bolt.category == "Крепёж / Болты"
    assert (bolt.quantity, bolt.stock_kind, bolt.stock_text) == (Decimal(50), "at_least", ">50")
    assert bolt.prices == {
        "retail": {"price": "14", "currency": ""},
        "rrp": {"price": "15.00", "currency": ""},
    }
    bad = items["K-002"]
    assert (bad.barcodes, bad.barcodes_invalid) == ([], [layouts.BAD_EAN])
    assert (bad.quantity, bad.stock_kind) == (None, "yes")
    # The first list became the catalogue, with every column.
    entry = CatalogueEntry.objects.get(config=config, sku="K-001", valid_to__isnull=True)
    assert (entry.brand, entry.category, entry.prices) == (bolt.brand, bolt.category, bolt.prices)
    # The invalid barcode is a row warning, not a row error.
    assert price_import.rows_failed == 0
    warnings = price_import.parse_info["row_warnings"]
    assert warnings[0]["row"] == 6


def test_stock_per_warehouse_and_a_two_line_header(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.xlsx", layouts.two_line_header_xlsx())]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    cable = items_of(price_import)["C-2"]
    assert cable.stocks == {
        "Остаток Москва": {"quantity": "0", "kind": "no", "text": "нет"},
        "Остаток СПб": {"quantity": None, "kind": "yes", "text": "есть"},
    }
    assert cable.category == "Кабели"


def test_a_csv_with_headings_is_stored_with_its_categories(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.csv", layouts.distributor_csv())]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    items = items_of(price_import)
    assert items["100300"].category == "Расходники"
    assert (items["100235"].pack, items["100235"].min_order) == (Decimal(2), Decimal(4))


def test_configured_price_columns_and_warehouses(mailbox, config):
    config.columns = {
        "prices": {"rrp": {"column": "РРЦ", "currency": "usd"}},
        "stocks": {"МСК": "I"},
    }
    config.save()
    (price_import,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    drill = items_of(price_import)["K-004"]
    assert drill.prices == {"rrp": {"price": "6490", "currency": "USD"}}
    assert drill.stocks == {"МСК": {"quantity": "50", "kind": "at_least", "text": "БОЛЕЕ50"}}


def test_a_list_without_new_columns_keeps_their_defaults(mailbox, config):
    csv = "Артикул;Наименование;Цена;Остаток\nA-1;Болт;10,50;5\n".encode("cp1251")
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    item = PriceItem.objects.get(price_import=price_import)
    assert (item.brand, item.barcodes, item.prices, item.stocks, item.category) == (
        "",
        [],
        {},
        {},
        "",
    )


def test_a_change_of_an_other_price_alone_changes_the_catalogue_entry(mailbox, config):
    run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    (second,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx(retail=20))]))
    assert second.status == Status.SUCCEEDED, second.last_error
    entry = CatalogueEntry.objects.get(config=config, sku="K-001", valid_to__isnull=True)
    assert entry.prices["retail"]["price"] == "20"
    assert entry.price_import_id == second.pk


def test_the_diff_counts_changes_and_jumps_per_price_type(mailbox, config):
    run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    (second,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx(retail=30))]))
    assert (second.diff["changed"], second.diff["jumps"]) == (0, 0)
    assert second.diff["price_types"] == {
        "retail": {
            "changed": 1,
            "jumps": 1,
            "went": 0,
            "changed_sample": [{"sku": "K-001", "old": "14", "new": "30"}],
            "jumps_sample": [{"sku": "K-001", "old": "14", "new": "30"}],
        }
    }


def test_the_same_list_again_changes_nothing(mailbox, config):
    first = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))[0]
    (again,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    assert again.diff["changed"] == 0 and again.diff.get("price_types", {}) == {}
    entry = CatalogueEntry.objects.get(config=config, sku="K-001", valid_to__isnull=True)
    assert entry.price_import_id == first.pk


def test_exports_carry_the_new_columns_under_russian_titles(mailbox, config):
    import io

    from django.utils import translation

    from pricefeed import exports

    (price_import,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    with translation.override("ru"):
        text = b"".join(exports.csv_chunks(exports.import_rows(price_import))).decode("utf-8-sig")
        catalogue = exports.catalogue_rows(config)
        titles = [c.title for c in catalogue.columns]
    header, *lines = text.splitlines()
    assert header.split(";") == [
        "артикул",
        "наименование",
        "цена",
        "валюта",
        "количество",
        "артикул производителя",
        "бренд",
        "штрихкоды",
        "неверные штрихкоды",
        "единица измерения",
        "категория",
        "остаток как в файле",
        "цена: Розница",
        "валюта: Розница",
        "цена: РРЦ",
        "валюта: РРЦ",
    ]
    first = lines[0].split(";")
    assert first[0] == "K-001" and first[5] == "DIN933-M8"
    assert first[7] == f"{layouts.GOOD_EAN}, {layouts.GOOD_EAN_2}"
    assert first[10] == "Крепёж / Болты"
    assert first[12] == "14"
    assert titles[:5] == header.split(";")[:5] and "цена: РРЦ" in titles
    out = io.BytesIO()
    with translation.override("ru"):
        assert exports.write_xlsx(exports.import_rows(price_import), out) == 6


def test_an_export_of_a_list_without_new_columns_has_only_the_usual_ones(mailbox, config):
    from pricefeed import exports

    csv = "Артикул;Наименование;Цена;Остаток\nA-1;Болт;10,50;5\n".encode("cp1251")
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert len(exports.import_rows(price_import).columns) == 5


def test_the_api_gives_an_items_every_column(mailbox, config, admin_user):
    from rest_framework.test import APIClient

    (price_import,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    api = APIClient()
    api.force_authenticate(admin_user)
    rows = api.get(f"/api/imports/{price_import.pk}/items/").json()["results"]
    bolt = next(row for row in rows if row["sku"] == "K-001")
    assert bolt["article"] == "DIN933-M8"
    assert bolt["barcodes"] == [layouts.GOOD_EAN, layouts.GOOD_EAN_2]
    assert bolt["prices"]["rrp"] == {"price": "15.00", "currency": ""}
    assert (bolt["stock_kind"], bolt["stock_text"], bolt["quantity"]) == (
        "at_least",
        ">50",
        "50.0000",
    )
    assert bolt["category"] == "Крепёж / Болты"
    entries = api.get(f"/api/configs/{config.pk}/catalogue/").json()["results"]
    assert {e["sku"]: e for e in entries}["K-001"]["brand"] == "Bossard"


def test_the_import_page_shows_the_diff_per_price_type_in_russian(mailbox, config, admin_client):
    from django.urls import reverse

    run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx())]))
    (second,) = run_all(receive(mailbox, [("dealer.xlsx", layouts.dealer_xlsx(retail=30))]))
    page = admin_client.get(
        reverse("admin:pricefeed_priceimport_change", args=[second.pk]),
        HTTP_ACCEPT_LANGUAGE="ru",
    ).content.decode()
    assert "Розница: изменено цен — 1, из них больше чем на 50% — 1" in page
    assert "K-001: 14,00 → 30,00" in page


def _writer_lines(groups, extras):
    """The COPY lines an ItemWriter hands on for ``extras`` (ExtraColumns, as parse()
    gives them, before the rows) and blocks of the rows grouped as ``groups``."""
    from pricefeed import parsing
    from pricefeed.imports import storage

    rows = {
        2: ("A", "Болт", "1.5", None),
        3: ("B", "Гайка", "2", "4"),
        4: ("C", "Шайба\tМ8", "3", "5"),
        5: ("D", "Винт", "4", None),
    }
    texts = []

    def write_block(block, ends, fields=None):
        texts.append(storage._block_copy_text(1, block, ends, fields))

    writer = storage.ItemWriter(lambda rows, ends, rich=False: None, write_block)
    given = list(extras)
    for group in groups:
        while given and given[0].first_row <= group[-1]:
            writer.take_extras(given.pop(0))
        writer.take_block(
            parsing.RowBlock(
                first_row=group[0],
                skus=[rows[n][0] for n in group],
                names=[rows[n][1] for n in group],
                prices=[rows[n][2] for n in group],
                currencies="RUB",
                quantities=[rows[n][3] for n in group],
            )
        )
    return "".join(texts).splitlines(), writer.rich


def test_a_block_takes_its_chunks_extra_values_however_the_rows_are_grouped():
    # A block of just a chunk's rows takes the chunk's formatted values as they are;
    # blocks grouped otherwise (rows that were errors or headings between) spread them
    # per row first: the same lines either way, escaped alike.
    from pricefeed import parsing

    extras = [
        parsing.ExtraColumns(2, 3, {"brand": ["Bossard", "IEK\\x", ""], "unit": ["шт"] * 3}),
        parsing.ExtraColumns(5, 1, {"unit": ["м"]}),
    ]
    rest = ["\\N", "\\N", "", "", "", "{}", "{}", "0", "\\N"]  # pack .. config, valid_from
    aligned, rich = _writer_lines([[2, 3, 4], [5]], extras)
    assert rich
    assert [line.split("\t")[3:] for line in aligned] == [
        ["A", "Болт", "1.5", "RUB", "\\N", "Bossard", "", "{}", "{}", "шт", *rest],
        ["B", "Гайка", "2", "RUB", "4", "IEK\\\\x", "", "{}", "{}", "шт", *rest],
        ["C", "Шайба\\tМ8", "3", "RUB", "5", "", "", "{}", "{}", "шт", *rest],
        ["D", "Винт", "4", "RUB", "\\N", "", "", "{}", "{}", "м", *rest],
    ]
    assert _writer_lines([[2], [3, 4, 5]], extras) == (aligned, True)
    assert _writer_lines([[2], [4], [5]], extras)[0] == [aligned[0], aligned[2], aligned[3]]
    # A block after a row with values carries the columns, empty.
    first, line = _writer_lines([[2], [5]], extras[:1])[0]
    assert first == aligned[0]
    assert line.split("\t")[8:] == ["", "", "{}", "{}", "", *rest]


def _two_prices_csv(n: int, *, retail: bool) -> bytes:
    header = "Код товара;Наименование;Цена опт" + (";Цена розн." if retail else "")
    lines = [header] + [
        f"S-{i:03};Товар {i};{100 + i}" + (f";{150 + i}" if retail else "") for i in range(n)
    ]
    return ("\n".join(lines) + "\n").encode()


def test_an_import_that_takes_a_price_type_from_the_list_is_held(mailbox, config):
    """The supplier renamed its retail column: every retail price would go without a
    word. The import waits for an operator, the reason naming the type."""
    run_all(receive(mailbox, [("прайс.csv", _two_prices_csv(30, retail=True))]))
    (held,) = run_all(receive(mailbox, [("прайс.csv", _two_prices_csv(30, retail=False))]))

    assert held.status == Status.SUCCEEDED, held.last_error
    assert held.review == PriceImport.Review.HELD and held.accepted_at is None
    assert held.diff["price_types"]["retail"]["went"] == 30
    assert "goes from 30 of the 30 current items (100%)" in str(held.review_reason)
    with translation.override("ru"):
        assert shown(held, "review_reason") == (
            "цена «Розница» пропадает у 30 из 30 текущих позиций (100%), больше допустимых 30%"
        )
    entry = CatalogueEntry.objects.get(config=config, sku="S-001", valid_to__isnull=True)
    assert entry.prices["retail"]["price"] == "151"  # still current


def test_a_price_type_that_goes_from_a_few_items_only_is_not_held(mailbox, config):
    first = _two_prices_csv(30, retail=True)
    run_all(receive(mailbox, [("прайс.csv", first)]))
    lines = first.decode().splitlines()
    lines[1] = lines[1].rsplit(";", 1)[0] + ";"  # one item without its retail price
    (second,) = run_all(receive(mailbox, [("прайс.csv", ("\n".join(lines) + "\n").encode())]))

    assert second.diff["price_types"]["retail"]["went"] == 1
    assert second.accepted_at is not None and second.review != PriceImport.Review.HELD
