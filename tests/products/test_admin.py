"""Our products in the admin, in Russian: the list with its search and filters, and the
product's page with every supplier's offer, the proposed links apart, and the history;
who may view and who may change."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import translation

from outbox.models import OutboxEvent
from products.events import PRODUCTS_CHANGED
from products.models import Product

pytestmark = pytest.mark.usefixtures("fast_password_hashing")


def person(role: str) -> Client:
    user = User.objects.create_user(role, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client = Client(HTTP_ACCEPT_LANGUAGE="ru")
    client.force_login(user)
    return client


def page(client: Client, url: str, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


LIST = "/admin/products/product/"


def test_the_list_shows_each_product_with_its_links_in_russian(world):
    html = page(person("viewer"), LIST)

    assert "Наши товары" in html and "Болт М8х40" in html and "Гайка М8" in html
    assert "Крепёж / Болты" in html
    # P-1 has three links that are not rejected; P-2 none.
    assert '<td class="field-links">3</td>' in html
    assert '<td class="field-links">0</td>' in html


@pytest.mark.parametrize(
    ("term", "found"),
    [
        ("P-1", "Болт"),
        ("P-", "Гайка"),
        ("a-1", "Болт"),
        ("4600000000008", "Болт"),
        ("гайка", "Гайка"),
    ],
)
def test_the_list_finds_a_product_by_code_article_barcode_or_name(world, term, found):
    html = page(person("viewer"), LIST, q=term)
    assert found in html


def test_the_list_filters_active_and_retired_brand_and_top_category(world):
    Product.objects.filter(own_code="P-2").update(retired_at="2026-12-01T00:00:00Z")
    viewer = person("viewer")

    retired = page(viewer, LIST, active="no")
    by_brand = page(viewer, LIST, brand="Bosch")
    by_category = page(viewer, LIST, category="Крепёж")

    assert "Гайка М8" in retired and "Болт М8х40" not in retired
    assert "Болт М8х40" in by_brand and "Гайка М8" not in by_brand
    assert "Болт М8х40" in by_category and "Гайка М8" in by_category


def test_the_product_page_shows_every_suppliers_offer_proposed_apart_and_history(world):
    html = page(person("viewer"), f"{LIST}{world.bolt.pk}/change/")

    offers, rest = html.split("Предложенные связи", 1)
    proposed, history = rest.split("Прошлые предложения", 1)
    # Current offers: both suppliers, each with its price now and how it is linked.
    assert "Ромашка" in offers and "R-1" in offers and "13,75" in offers
    assert "Василёк" in offers and "V-9" in offers and "11,20" in offers
    assert "по штрихкоду · связан автоматически" in offers
    assert "вручную · подтверждена" in offers
    # The proposed link apart, never among the offers.
    assert "R-2" in proposed and "R-2" not in offers
    # The first supplier's old price ended when its next list came.
    assert "12,50" in history and "12,50" not in offers


# The bolt's change form as the world has it (world.bolt).
BOLT_FORM = {
    "own_code": "P-1",
    "name": "Болт М8х40",
    "brand": "Bosch",
    "article": "A-1",
    "barcodes": "4600000000008",
    "unit": "шт",
    "category": "Крепёж / Болты",
}


def test_a_viewer_cannot_change_a_product_and_an_operator_can(world):
    url = f"{LIST}{world.bolt.pk}/change/"
    form = BOLT_FORM | {"name": "Болт М8х40 DIN933"}
    assert person("viewer").post(url, form).status_code == 403

    response = person("operator").post(url, form)

    assert response.status_code == 302
    assert Product.objects.get(pk=world.bolt.pk).name == "Болт М8х40 DIN933"


def test_a_category_or_brand_changed_by_hand_is_announced_for_the_prices(world):
    url = f"{LIST}{world.bolt.pk}/change/"
    form = BOLT_FORM
    operator = person("operator")
    assert operator.post(url, form | {"name": "Болт М8х40 DIN933"}).status_code == 302
    assert not OutboxEvent.objects.filter(kind=PRODUCTS_CHANGED).exists()  # the name only

    assert operator.post(url, form | {"category": "Крепёж / Болты / DIN 933"}).status_code == 302

    (event,) = OutboxEvent.objects.filter(kind=PRODUCTS_CHANGED)
    assert event.payload == {"product_ids": [world.bolt.pk]}


def test_a_barcode_with_a_wrong_check_digit_is_refused_by_the_form(world):
    form = {"own_code": "P-9", "name": "Шайба", "barcodes": "4600000000009"}
    with translation.override("ru"):
        response = person("operator").post(f"{LIST}add/", form)
    assert response.status_code == 200
    assert "4600000000009: неверная контрольная цифра" in response.content.decode()
    assert not Product.objects.filter(own_code="P-9").exists()


def test_nobody_but_a_superuser_may_delete_a_product(world):
    assert (
        person("operator").post(f"{LIST}{world.nut.pk}/delete/", {"post": "yes"}).status_code == 403
    )


def test_the_brand_and_category_filters_are_read_again_only_when_products_change(
    world, django_assert_num_queries
):
    from products.admin import BrandFilter, TopCategoryFilter

    def choices() -> tuple[list, list]:
        brand = BrandFilter(None, {}, Product, None)
        top = TopCategoryFilter(None, {}, Product, None)
        return list(brand.lookup_choices), list(top.lookup_choices)

    brands, tops = choices()
    assert ("Bosch", "Bosch") in brands and ("Крепёж", "Крепёж") in tops
    with django_assert_num_queries(2):  # the catalogue's version, once per filter
        assert choices() == (brands, tops)

    Product.objects.create(own_code="P-9", name="Дюбель", brand="Fischer", category="Анкеры")
    brands, tops = choices()
    assert ("Fischer", "Fischer") in brands and ("Анкеры", "Анкеры") in tops
