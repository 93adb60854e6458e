"""Price rules, offers and our prices in the admin, in Russian: operators keep the rules
(each change asks for every price again), a price's page explains it, and a held price
is approved only by someone allowed to."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal as D

import pytest
from django.utils import timezone

from outbox.models import OutboxEvent
from pricing import offers
from pricing.models import PriceRule, ProductPrice
from tests.pricing.test_admin import person
from tests.pricing.test_offers import world  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("fast_password_hashing")

RULES = "/admin/pricing/pricerule/"
PRICES = "/admin/pricing/productprice/"


def held_bolt(world) -> ProductPrice:  # noqa: F811
    offers.offers_refresh([world.bolt.pk])
    PriceRule.objects.update(markup_percent=D(60))
    offers.offers_refresh([world.bolt.pk])
    return ProductPrice.objects.get(product=world.bolt)


def test_an_operator_keeps_a_rule_and_every_price_is_asked_for_again(world):  # noqa: F811
    operator = person("operator")
    refused = operator.post(
        RULES + "add/",
        {"name": "Дорогое", "position": "10", "markup_percent": "-150", "fixed_add": "0",
         "rounding": ".99", "rrp_type": "rrp", "hold_percent": "25"},
    ).content.decode()  # fmt: skip
    assert "Наценка не может снижать цену больше чем на 99 процентов" in refused
    saved = operator.post(
        RULES + "add/",
        {"name": "Дорогое", "position": "10", "enabled": "on", "cost_from": "1000",
         "markup_percent": "15", "fixed_add": "0", "rounding": ".99", "respect_rrp": "on",
         "rrp_type": "rrp", "hold_percent": "25"},
    )  # fmt: skip
    assert saved.status_code == 302
    assert PriceRule.objects.filter(name="Дорогое", cost_from=D(1000)).exists()
    assert OutboxEvent.objects.filter(kind="pricing.refresh").count() == 1
    assert person("viewer").get(RULES + "add/").status_code == 403


def test_a_prices_page_explains_it_in_russian(world):  # noqa: F811
    price = held_bolt(world)
    viewer = person("viewer")
    page = viewer.get(f"{PRICES}{price.pk}/change/").content.decode()
    html = page.replace("\xa0", " ")
    rate_day = (timezone.localdate() - timedelta(days=1)).strftime("%d.%m.%Y")
    assert (
        f"Лучшее предложение: Василёк, код V-1, 10,50 USD по 91,8 ₽ (курс на {rate_day} "
        "с надбавкой поставщика) = 963,90 ₽." in html
    )
    assert "Правило цены «Всё»." in html
    assert "Себестоимость: 963,90 ₽." in html
    assert "Наценка 60 %: 1 542,24 ₽." in html
    assert "Округление «вверх до рубля»: 1 543,00 ₽." in html
    assert "Отличается от опубликованной 1 157,00 ₽ больше чем на 25 %: ждёт утверждения." in html
    assert "ждёт утверждения" in viewer.get(PRICES).content.decode()
    # The product's offers beside it: the best marked, the recommended price apart.
    assert "<td>Василёк</td><td>основная</td><td>10,50 USD</td><td>963,90</td>" in html
    assert "<td>Ромашка</td><td>РРЦ</td><td>1 500,00 RUB</td><td>1 500,00</td>" in html
    assert html.count("★") == 1


def test_a_held_price_is_approved_by_an_operator_only(world):  # noqa: F811
    price = held_bolt(world)
    action = {"action": "approve", "_selected_action": [price.pk]}
    viewer = person("viewer")
    assert "approve" not in viewer.get(PRICES).content.decode()
    viewer.post(PRICES, action)
    price.refresh_from_db()
    assert price.status == ProductPrice.Status.HELD
    done = person("operator").post(PRICES, action, follow=True).content.decode()
    assert "1 цена утверждена и опубликована." in done
    price.refresh_from_db()
    assert (price.status, price.price, price.approved_by.username) == (
        ProductPrice.Status.PUBLISHED,
        D("1543.00"),
        "operator",
    )
