"""The feeds' admin: a new feed's URL shown once, a new token by permission only, a
customer group's recipients and schedule checked."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages

from feeds.models import CustomerGroup, Feed
from feeds.tokens import token_hash

pytestmark = pytest.mark.django_db

URL = re.compile(r"http://testserver/feeds/([\w-]+)/")


def shown_tokens(response) -> list[str]:
    return [m for message in get_messages(response.wsgi_request) for m in URL.findall(str(message))]


def test_a_new_feeds_url_is_shown_once_and_only_its_hash_kept(admin_client, client):
    response = admin_client.post(
        "/admin/feeds/feed/add/",
        {"name": "Маркет", "format": "yml", "enabled": "on", "shop_name": "Магазин"},
    )
    assert response.status_code == 302
    [token] = shown_tokens(response)
    feed = Feed.objects.get()
    assert feed.token_hash == token_hash(token)
    assert client.get(f"/feeds/{token}/").status_code == 200
    # The next page shows it (the message); after that, no page shows it again.
    assert token in admin_client.get(response.url).content.decode()
    page = admin_client.get(f"/admin/feeds/feed/{feed.pk}/change/").content.decode()
    assert token not in page and feed.token_hash not in page
    assert token not in admin_client.get("/admin/feeds/feed/").content.decode()


def test_a_new_token_replaces_the_old_one(admin_client, client):
    admin_client.post(
        "/admin/feeds/feed/add/", {"name": "Маркет", "format": "csv", "enabled": "on"}
    )
    feed = Feed.objects.get()
    old = feed.token_hash
    response = admin_client.post(
        "/admin/feeds/feed/", {"action": "new_token", "_selected_action": [feed.pk]}
    )
    # The add page's message may still wait to be shown: the action's is the last.
    token = shown_tokens(response)[-1]
    feed.refresh_from_db()
    assert feed.token_hash == token_hash(token) != old
    assert client.get(f"/feeds/{token}/").status_code == 200


def test_the_new_token_action_needs_its_permission(client):
    user = get_user_model().objects.create_user("op", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="feeds", codename__in=["view_feed", "change_feed"]
        )
    )
    feed = Feed.objects.create(name="Маркет", format="yml", token_hash="0" * 64)
    client.force_login(user)
    page = client.get("/admin/feeds/feed/").content.decode()
    assert "new_token" not in page
    response = client.post(
        "/admin/feeds/feed/", {"action": "new_token", "_selected_action": [feed.pk]}
    )
    assert shown_tokens(response) == []
    feed.refresh_from_db()
    assert feed.token_hash == "0" * 64
    user.user_permissions.add(Permission.objects.get(codename="renew_token_feed"))
    user = get_user_model().objects.get(pk=user.pk)
    client.force_login(user)
    assert "new_token" in client.get("/admin/feeds/feed/").content.decode()


def test_a_customer_group_refuses_a_wrong_address_and_keeps_its_days(admin_client):
    data = {
        "name": "Опт",
        "enabled": "on",
        "adjustment_percent": "-5",
        "format": "xlsx",
        "recipients": "buyer@example.ru, not-an-address",
        "days": ["1", "5"],
        "time": "09:30",
    }
    response = admin_client.post("/admin/feeds/customergroup/add/", data)
    assert response.status_code == 200
    assert "not-an-address" in response.content.decode()
    assert not CustomerGroup.objects.exists()
    data["recipients"] = "buyer@example.ru\nboss@example.ru"
    assert admin_client.post("/admin/feeds/customergroup/add/", data).status_code == 302
    group = CustomerGroup.objects.get()
    assert group.days == [1, 5]
    assert group.recipient_list() == ["buyer@example.ru", "boss@example.ru"]


def test_the_sweep_and_the_handler_are_registered():
    from core import sweeps
    from feeds.customer_lists import EVENT, customer_lists_sweep
    from feeds.handlers import customer_list
    from outbox.handlers import handler_for

    assert sweeps.registered()["customer lists"] is customer_lists_sweep
    assert handler_for(EVENT) is customer_list
