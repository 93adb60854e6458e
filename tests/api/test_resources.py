"""What the API shows: configs, imports and their items, a config's catalogue now and
as of a moment, a SKU's history and the changes since, in cursor pages (api.views)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devkit.samples import price_list_csv
from pricefeed.models import PriceImport, PriceItem
from tests.factories import create_config, create_mailbox, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

Status = PriceImport.Status


def send(mailbox, rows, name: str = "прайс.csv") -> PriceImport:
    (price_import,) = run_all(receive(mailbox, [(name, price_list_csv(rows))]))
    assert price_import.status in (Status.SUCCEEDED, Status.PARTIAL), price_import.last_error
    return price_import


def items(n: int, *, price: int = 100) -> list[tuple]:
    return [(f"S-{i:03}", f"Товар {i}", Decimal(price), i % 7) for i in range(n)]


def walk(client, url: str, **params) -> tuple[list[dict], list[str]]:
    """Every row of a list, page by page through its cursor, and the SQL it ran."""
    rows: list[dict] = []
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params)
        while True:
            assert response.status_code == 200, response.content
            body = response.json()
            rows.extend(body["results"])
            if body["next"] is None:
                break
            response = client.get(body["next"])
    return rows, [q["sql"] for q in queries.captured_queries]


def test_configs_show_their_patterns_and_mailbox_but_no_secret(api, config):
    response = api.get("/api/configs/")
    (shown,) = response.json()["results"]
    assert shown == {
        "id": config.pk,
        "name": "Поставщик",
        "mailbox": "prices",
        "enabled": True,
        "mode": "snapshot",
        "sender_pattern": "*@acme.test",
        "subject_pattern": "",
        "filename_pattern": "*",
    }
    assert "s3cret" not in response.content.decode()
    assert api.get(f"/api/configs/{config.pk}/").json() == shown
    assert api.get("/api/configs/999999/").status_code == 404


def test_an_import_shows_its_outcome_counts_and_when_it_became_current(api, mailbox, config):
    price_import = send(mailbox, items(3))
    shown = api.get(f"/api/imports/{price_import.pk}/").json()
    assert shown["config"] == config.pk
    assert shown["status"] == "SUCCEEDED"
    assert (shown["rows_total"], shown["rows_ok"], shown["rows_failed"]) == (3, 3, 0)
    assert shown["rows_skipped"] == 0
    assert shown["review"] == "" and shown["review_reason"] == ""
    assert shown["filename"] == "прайс.csv" and len(shown["sha256"]) == 64
    assert shown["diff"]["added"] == 3
    # ISO 8601 with the zone (UTC here: "Z").
    assert shown["accepted_at"].endswith("Z") and "T" in shown["accepted_at"]
    assert shown["created_at"] and shown["finished_at"]


def test_imports_are_filtered_by_config_status_and_creation_time(api, mailbox, config):
    other = create_config(create_mailbox(name="second"), name="Другой")
    first = send(mailbox, items(3))
    second = send(mailbox, items(4))
    failed = run_all(receive(mailbox, [("price.pdf", b"%PDF-1.7 not a list")]))[0]
    assert failed.status == Status.FAILED

    def ids(**params) -> list[int]:
        response = api.get("/api/imports/", params)
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert ids() == [failed.pk, second.pk, first.pk]  # the latest first
    assert ids(config=config.pk, status="SUCCEEDED") == [second.pk, first.pk]
    assert ids(config=other.pk) == []
    assert ids(status="FAILED") == [failed.pk]
    assert ids(created_since=second.created_at.isoformat()) == [failed.pk, second.pk]
    assert api.get("/api/imports/", {"status": "BROKEN"}).status_code == 400
    assert api.get("/api/imports/", {"created_since": "yesterday"}).status_code == 400


def test_an_imports_items_are_walked_once_each_in_file_order_without_offset(api, mailbox, config):
    send(mailbox, items(5))  # another import's items stay out
    price_import = send(mailbox, items(25, price=7))
    rows, sql = walk(api, f"/api/imports/{price_import.pk}/items/", page_size=10)
    assert [row["row_number"] for row in rows] == list(
        PriceItem.objects.of_import(price_import.pk)
        .order_by("pk")
        .values_list("row_number", flat=True)
    )
    assert len(rows) == 25 and len({row["sku"] for row in rows}) == 25
    assert rows[0] == {
        "row_number": rows[0]["row_number"],
        "sku": "S-000",
        "name": "Товар 0",
        "price": "7.0000",
        "currency": "RUB",  # from the header "Цена, руб."
        "quantity": "0.0000",
        # The columns this list does not have, empty.
        "brand": "",
        "article": "",
        "barcodes": [],
        "barcodes_invalid": [],
        "unit": "",
        "pack": None,
        "min_order": None,
        "category": "",
        "stock_text": "",
        "stock_kind": "",
        "prices": {},
        "stocks": {},
    }
    assert not [q for q in sql if " OFFSET " in q.upper()]


def test_items_of_an_unknown_import_are_404(api, db):
    assert api.get("/api/imports/424242/items/").status_code == 404


def test_page_size_is_at_most_1000(api, mailbox, config):
    send(mailbox, items(3))
    response = api.get(f"/api/configs/{config.pk}/catalogue/", {"page_size": 5000})
    assert response.status_code == 200
    # The cursor's link names the size given; the pagination caps what it serves.
    with CaptureQueriesContext(connection) as queries:
        api.get(f"/api/configs/{config.pk}/catalogue/", {"page_size": 5000})
    assert any("LIMIT 1001" in q["sql"] for q in queries.captured_queries)


def test_the_catalogue_is_walked_by_sku_once_each_without_offset(api, mailbox, config):
    send(mailbox, items(23))
    rows, sql = walk(api, f"/api/configs/{config.pk}/catalogue/", page_size=5)
    assert [row["sku"] for row in rows] == [f"S-{i:03}" for i in range(23)]
    assert not [q for q in sql if " OFFSET " in q.upper()]
    assert rows[0]["price"] == "100.0000" and rows[0]["valid_to"] is None
    assert rows[0]["ended_by"] is None and rows[0]["row_number"] >= 1


def test_the_catalogue_as_of_a_moment_is_what_was_current_then(api, mailbox, config):
    first = send(mailbox, [("A", "Болт", Decimal(10), 1), ("B", "Гайка", Decimal(20), 1)])
    second = send(mailbox, [("A", "Болт", Decimal(11), 1), ("C", "Винт", Decimal(30), 1)])
    url = f"/api/configs/{config.pk}/catalogue/"

    def prices(**params) -> dict[str, str]:
        response = api.get(url, params)
        assert response.status_code == 200, response.content
        return {row["sku"]: row["price"] for row in response.json()["results"]}

    assert prices() == {"A": "11.0000", "C": "30.0000"}
    then = prices(as_of=first.accepted_at.isoformat())
    assert then == {"A": "10.0000", "B": "20.0000"}
    assert prices(as_of=second.accepted_at.isoformat()) == prices()
    # A time is written the same way on every resource (DRF's DateTimeField's form).
    (entry,) = api.get(url, {"sku": "C"}).json()["results"]
    assert entry["valid_from"] == api.get(f"/api/imports/{second.pk}/").json()["accepted_at"]
    assert api.get(url, {"as_of": "not a time"}).status_code == 400


def test_the_catalogue_finds_a_sku_exactly_or_by_prefix(api, mailbox, config):
    send(mailbox, [*items(12), ("X-1/М8", "Болт", Decimal(5), 1)])
    url = f"/api/configs/{config.pk}/catalogue/"
    assert [r["sku"] for r in api.get(url, {"sku": "S-001"}).json()["results"]] == ["S-001"]
    assert api.get(url, {"sku": "S-0"}).json()["results"] == []
    found = [r["sku"] for r in api.get(url, {"search": "S-01"}).json()["results"]]
    assert found == ["S-010", "S-011"]
    assert [r["sku"] for r in api.get(url, {"search": "X-1/"}).json()["results"]] == ["X-1/М8"]


def test_a_skus_history_is_every_value_it_had_the_latest_first(api, mailbox, config):
    first = send(mailbox, [("A/1", "Болт", Decimal(10), 1)])
    second = send(mailbox, [("A/1", "Болт", Decimal(11), 1)])
    response = api.get(f"/api/configs/{config.pk}/history/", {"sku": "A/1"})
    rows = response.json()["results"]
    assert [(r["price"], r["price_import"]) for r in rows] == [
        ("11.0000", second.pk),
        ("10.0000", first.pk),
    ]
    assert rows[1]["ended_by"] == second.pk and rows[1]["valid_to"] == rows[0]["valid_from"]
    walked, _ = walk(api, f"/api/configs/{config.pk}/history/", sku="A/1", page_size=1)
    assert walked == rows
    assert api.get(f"/api/configs/{config.pk}/history/").status_code == 400


def test_changes_since_an_import_or_a_moment_list_current_and_removed_skus(api, mailbox, config):
    first = send(
        mailbox,
        [("A", "Болт", Decimal(10), 1), ("B", "Гайка", Decimal(20), 1), ("C", "Шайба", 3, 1)],
    )
    send(
        mailbox,
        [("A", "Болт", Decimal(11), 1), ("B", "Гайка", Decimal(20), 1), ("D", "Винт", 4, 1)],
    )
    url = f"/api/configs/{config.pk}/changes/"
    expected = [("A", "current", "11.0000"), ("C", "removed", "3.0000"), ("D", "current", "4.0000")]

    for params in ({"since_import": first.pk}, {"since": first.accepted_at.isoformat()}):
        rows, sql = walk(api, url, page_size=1, **params)
        assert [(r["sku"], r["change"], r["price"]) for r in rows] == expected
        assert not [q for q in sql if " OFFSET " in q.upper()]

    assert api.get(url).status_code == 400
    assert api.get(url, {"since_import": 999999}).status_code == 400


def test_the_catalogue_of_an_unknown_config_is_404(api, db):
    assert api.get("/api/configs/424242/catalogue/").status_code == 404


def test_rows_are_written_as_drfs_model_serializer_would(mailbox, config):
    """The hand-written row serializers (api.serializers.RowSerializer) match what a
    ModelSerializer of the same fields gives, value for value."""
    from rest_framework import serializers

    from api.serializers import EntrySerializer, ItemSerializer
    from pricefeed.catalogue import catalogue_current
    from pricefeed.models import CatalogueEntry

    send(mailbox, [("A", "Болт", Decimal("1234.5"), 3), ("B", "Гайка", Decimal("0.01"), 0)])
    send(mailbox, [("A", "Болт", Decimal("1300"), 3)])

    class Entry(serializers.ModelSerializer):
        class Meta:
            model = CatalogueEntry
            fields = list(EntrySerializer().fields)

    class Item(serializers.ModelSerializer):
        class Meta:
            model = PriceItem
            fields = list(ItemSerializer().fields)

    entries = CatalogueEntry.objects.filter(config=config).order_by("pk")
    expected = [dict(row) for row in Entry(entries, many=True).data]
    assert EntrySerializer(EntrySerializer.rows(entries), many=True).data == expected
    assert any(row["valid_to"] for row in expected)
    current = catalogue_current(config.pk)
    assert len(EntrySerializer(EntrySerializer.rows(current), many=True).data) == 1
    items = PriceItem.objects.order_by("pk")
    expected = [dict(row) for row in Item(items, many=True).data]
    assert ItemSerializer(ItemSerializer.rows(items), many=True).data == expected


def page_plan(client, url: str, **params) -> str:
    """The plan of a list's page query (LIMIT page_size + 1), as PostgreSQL would run it
    on a table too big to read whole: these tables are tiny, so sequential and bitmap
    scans are off, and so are sorts (a plan still sorts when no index gives the order,
    which is what the tests look for; costed by estimates of a few rows, a sort was
    sometimes the cheaper choice)."""
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, {"page_size": 2, **params}).status_code == 200
    (sql,) = [q["sql"] for q in queries.captured_queries if "LIMIT 3" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def test_page_queries_are_index_ranges_in_index_order(api, mailbox, config):
    price_import = send(mailbox, items(10))
    plan = page_plan(api, f"/api/configs/{config.pk}/catalogue/")
    assert "one_current_entry_per_sku" in plan and "Sort" not in plan, plan
    plan = page_plan(api, f"/api/imports/{price_import.pk}/items/")
    assert "pricefeed_priceitem_pkey" in plan and "Sort" not in plan, plan
