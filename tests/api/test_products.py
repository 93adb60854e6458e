"""Our products in the API: the catalogue with its filters, a product, a product's offers
(products.selectors, as the admin shows them) and a config's unlinked lines."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from products.models import Product
from tests.api.conftest import token_client, user_with


def rows(client, url: str, **params) -> list[dict]:
    response = client.get(url, params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_products_by_own_code_with_every_field(api, world):
    (bolt, nut) = rows(api, "/api/products/")

    assert bolt == {
        "id": world.bolt.pk,
        "own_code": "P-1",
        "name": "Болт М8х40",
        "brand": "Bosch",
        "article": "A-1",
        "barcodes": ["4600000000008"],
        "unit": "шт",
        "category": "Крепёж / Болты",
        "active": True,
        "retired_at": None,
        "created_at": bolt["created_at"],
        "updated_at": bolt["updated_at"],
    }
    assert nut["own_code"] == "P-2"


def test_products_filtered_by_code_brand_active_and_change_time(api, world):
    Product.objects.filter(pk=world.nut.pk).update(
        retired_at=timezone.now(), updated_at=timezone.now() + timedelta(hours=1)
    )
    codes = lambda **params: [p["own_code"] for p in rows(api, "/api/products/", **params)]  # noqa: E731

    assert codes(own_code="P-2") == ["P-2"]
    assert codes(brand="bosch") == ["P-1"]
    assert codes(active="true") == ["P-1"]
    assert codes(active="false") == ["P-2"]
    since = (timezone.now() + timedelta(minutes=30)).isoformat()
    assert codes(updated_since=since) == ["P-2"]


def test_a_product_by_id_and_an_unknown_one_is_404(api, world):
    assert api.get(f"/api/products/{world.bolt.pk}/").json()["own_code"] == "P-1"
    assert api.get("/api/products/999999/").status_code == 404


def test_a_products_offers_are_each_suppliers_current_entry_and_how_it_is_linked(api, world):
    offers = rows(api, f"/api/products/{world.bolt.pk}/offers/")

    by_sku = {offer["supplier_sku"]: offer for offer in offers}
    assert set(by_sku) == {"R-1", "V-9"}
    assert {k: by_sku["R-1"][k] for k in ("supplier", "price", "currency", "quantity",
                                          "kind", "state", "confidence")} == {
        "supplier": "Ромашка", "price": "13.7500", "currency": "RUB", "quantity": "90.0000",
        "kind": "barcode", "state": "auto", "confidence": "0.990",
    }  # fmt: skip
    assert by_sku["V-9"]["state"] == "confirmed" and by_sku["V-9"]["price"] == "11.2000"
    assert by_sku["R-1"]["list_date"] is not None
    assert by_sku["R-1"]["config"] == world.first.pk

    with_proposed = rows(api, f"/api/products/{world.bolt.pk}/offers/", proposed="true")
    assert {offer["supplier_sku"] for offer in with_proposed} == {"R-1", "R-2", "V-9"}


def test_the_offers_of_an_unknown_product_are_404(api, world):
    assert api.get("/api/products/999999/offers/").status_code == 404


def test_a_configs_unlinked_lines_are_those_without_an_auto_or_confirmed_link(api, world):
    first = rows(api, f"/api/configs/{world.first.pk}/unlinked/")
    second = rows(api, f"/api/configs/{world.second.pk}/unlinked/")

    # R-2's link is only proposed: still unlinked, with the product it was proposed to.
    assert [(r["sku"], r["link_state"], r["link_product"]) for r in first] == [
        ("R-2", "proposed", "P-1")
    ]
    assert [(r["sku"], r["link_state"], r["price"]) for r in second] == [("V-8", None, "1.0000")]


def test_products_need_the_view_permission_on_products(world):
    without, _ = token_client(user_with("erp-1", ["view_catalogueentry"]))
    with_it, _ = token_client(user_with("erp-2", ["view_product"]))
    assert without.get("/api/products/").status_code == 403
    assert with_it.get("/api/products/").status_code == 200
    # Offers and unlinked lines show the links: their own permission.
    assert with_it.get(f"/api/products/{world.bolt.pk}/offers/").status_code == 403


@pytest.mark.parametrize("params", [{"active": "maybe"}, {"updated_since": "yesterday"}])
def test_a_filter_it_cannot_read_is_400(api, world, params):
    assert api.get("/api/products/", params).status_code == 400
