"""The configs list: an "overdue" column and filter; the config page's fieldset."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from core.dbtime import db_now_minus
from pricefeed.models import PriceListConfig
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "x"))
    return client


def scheduled(mailbox, name: str, *, hours_ago: int) -> PriceListConfig:
    config = factories.create_config(mailbox, name=name, expected_every_hours=24)
    PriceListConfig.objects.filter(pk=config.pk).update(created_at=db_now_minus(hours_ago * 3600))
    return config


def test_the_list_filters_overdue_configs_and_says_since_when(admin_client_, mailbox):
    scheduled(mailbox, "late-config", hours_ago=50)
    scheduled(mailbox, "fine-config", hours_ago=2)
    factories.create_config(mailbox, name="plain-config")

    overdue = admin_client_.get("/admin/pricefeed/pricelistconfig/?overdue=yes")
    rest = admin_client_.get("/admin/pricefeed/pricelistconfig/?overdue=no")
    everything = admin_client_.get("/admin/pricefeed/pricelistconfig/")

    assert [c.name for c in overdue.context["cl"].result_list] == ["late-config"]
    assert sorted(c.name for c in rest.context["cl"].result_list) == [
        "fine-config",
        "plain-config",
    ]
    html = everything.content.decode()
    cells = re.findall(r'<td class="field-overdue">(.*?)</td>', html)
    # By name: fine-config is on time; late-config's list was due 48 hours after it was
    # made, 2 hours ago; plain-config expects none.
    assert cells[0] == "no"
    assert ">2\xa0hours ago</time>" in cells[1]
    assert cells[2] == "—"


def test_the_config_page_has_the_expected_arrival_fieldset(admin_client_, mailbox):
    config = factories.create_config(mailbox)

    html = admin_client_.get(f"/admin/pricefeed/pricelistconfig/{config.pk}/change/").content
    html = html.decode()

    assert "Expected arrival" in html
    for field in ("expected_every_hours", "expected_weekdays", "expected_by", "expected_timezone"):
        assert f'name="{field}"' in html
    assert 'name="name"' in html and "Preview a file against this config" in html


def test_a_bad_schedule_saved_in_the_admin_is_a_message(admin_client_, mailbox):
    config = factories.create_config(mailbox)
    page = admin_client_.get(f"/admin/pricefeed/pricelistconfig/{config.pk}/change/")
    data = {
        k: v
        for k, v in page.context["adminform"].form.initial.items()
        if v is not None and k != "expected_weekdays"
    }
    data.update(mailbox=mailbox.pk, columns="{}", expected_by="10:00")

    response = admin_client_.post(f"/admin/pricefeed/pricelistconfig/{config.pk}/change/", data)

    assert response.status_code == 200
    assert "Choose the weekdays the list is due on by that time." in response.content.decode()
