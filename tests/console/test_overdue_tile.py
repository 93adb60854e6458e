"""The front page's tile of price lists that did not come on time."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from core.dbtime import db_now_minus
from pricefeed.models import PriceListConfig
from tests import factories

pytestmark = pytest.mark.django_db


def overdue(mailbox, name: str, *, hours_ago: int, every: int = 24) -> PriceListConfig:
    config = factories.create_config(mailbox, name=name, expected_every_hours=every)
    PriceListConfig.objects.filter(pk=config.pk).update(created_at=db_now_minus(hours_ago * 3600))
    return config


def viewer(*names: str) -> User:
    user = User.objects.create_user("someone", is_staff=True)
    for name in names:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return User.objects.get(pk=user.pk)


def test_the_tile_lists_each_overdue_config_linked_to_it(client, mailbox):
    late = overdue(mailbox, "Опт-Север", hours_ago=27)
    overdue(mailbox, "В срок", hours_ago=3)
    factories.create_config(mailbox, name="Без расписания")
    client.force_login(viewer("pricefeed.view_pricelistconfig"))

    response = client.get("/admin/")

    tile = response.context["dashboard"].tile("overdue")
    assert tile.title == "Price lists that did not come on time"
    assert tile.url == "/admin/pricefeed/pricelistconfig/?overdue=yes"
    assert tile.cell("overdue").value == 1
    assert tile.cell("overdue").alarm
    row = tile.rows[1]
    assert row.label == "Опт-Север"
    assert row.cells[0].value.startswith("late by 3")  # "3.0 h": 3 hours and a few ms
    assert row.cells[0].url == f"/admin/pricefeed/pricelistconfig/{late.pk}/change/"
    html = response.content.decode()
    assert 'id="tile-overdue"' in html
    assert f'href="/admin/pricefeed/pricelistconfig/{late.pk}/change/"' in html


def test_the_tile_says_so_in_russian(client, mailbox):
    overdue(mailbox, "Опт-Север", hours_ago=27)
    client.force_login(viewer("pricefeed.view_pricelistconfig"))

    response = client.get("/admin/", headers={"accept-language": "ru"})

    html = response.content.decode()
    assert "Прайс-листы не пришли вовремя" in html
    assert "опоздал на 3" in html


def test_many_overdue_configs_show_the_first_few_and_a_link_to_the_rest(client, mailbox):
    for n in range(7):
        overdue(mailbox, f"config {n}", hours_ago=30)
    client.force_login(viewer("pricefeed.view_pricelistconfig"))

    tile = client.get("/admin/").context["dashboard"].tile("overdue")

    assert tile.cell("overdue").value == 7
    assert len(tile.rows) == 1 + 5
    assert tile.notes == [("and 2 more", "/admin/pricefeed/pricelistconfig/?overdue=yes")]


def test_nobody_without_the_configs_view_permission_sees_the_tile(client, mailbox):
    overdue(mailbox, "Опт-Север", hours_ago=27)
    client.force_login(viewer("pricefeed.view_priceimport"))

    assert client.get("/admin/").context["dashboard"].tile("overdue") is None
