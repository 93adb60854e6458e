"""Price types: kept by operators in the admin, in Russian; a config maps price columns
to them, and the form says in Russian what it refuses."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import translation

from access.roles import OPERATOR, VIEWER
from pricefeed.models import PriceType
from tests.access.support import at_least, each_role, logged_in
from tests.pricefeed.test_forms import form

pytestmark = pytest.mark.django_db

TYPES = reverse("admin:pricefeed_pricetype_changelist")
ADD = reverse("admin:pricefeed_pricetype_add")


def test_the_usual_types_are_there_to_start_from():
    assert set(PriceType.objects.values_list("code", "name")) >= {
        ("opt", "Опт"),
        ("retail", "Розница"),
        ("rrp", "РРЦ"),
    }


@each_role
def test_price_types_are_seen_by_viewers_and_kept_by_operators(client, role):
    client = logged_in(client, role)
    listed = client.get(TYPES, HTTP_ACCEPT_LANGUAGE="ru")
    assert listed.status_code == (200 if at_least(role, VIEWER) else 403)
    if listed.status_code == 200:
        assert "Типы цен" in listed.content.decode()
    response = client.post(ADD, {"code": "purchase", "name": "Закупка", "position": 40})
    made = PriceType.objects.filter(code="purchase").exists()
    assert made == at_least(role, OPERATOR)
    if not made:
        assert response.status_code == 403


def columns(mapping: dict) -> str:
    return json.dumps(mapping, ensure_ascii=False)


def test_a_config_maps_price_columns_to_price_types_and_warehouses(mailbox):
    mapping = {
        "sku": "Код товара",
        "price": "Цена опт",
        "brand": "Бренд",
        "prices": {"rrp": "РРЦ", "retail": {"column": "H", "currency": "USD"}},
        "stocks": {"Москва": "Остаток МСК"},
    }
    f = form(mailbox, columns=columns(mapping))
    assert f.is_valid(), f.errors
    assert f.save().columns == mapping


@pytest.mark.parametrize(
    ("mapping", "russian"),
    [
        ({"prices": {"wholesale2": "F"}}, "Неизвестные типы цен: wholesale2"),
        ({"prices": ["РРЦ"]}, "«prices» должно быть объектом"),
        ({"prices": {"rrp": ""}}, "Столбец типа цены rrp"),
        ({"prices": {"rrp": {"column": "F", "rate": 2}}}, "Тип цены rrp"),
        ({"stocks": {"Москва": 5}}, "«stocks» должно быть объектом"),
        ({"colour": "F"}, "Неизвестные поля: colour"),
    ],
)
def test_bad_mappings_are_refused_in_russian(mailbox, mapping, russian):
    f = form(mailbox, columns=columns(mapping))
    with translation.override("ru"):
        assert not f.is_valid()
        assert russian in " ".join(f.errors["columns"])
