"""Every admin list's parameters, fuzzed: whatever a query string holds in a filter, the
search, the ordering or the page, a changelist answers (a 400 for a value it cannot
read, or Django's own "?e=1" redirect), never 500 (a 500 mails ADMINS, unthrottled).

The lists and their parameters are discovered, not listed by hand: every ModelAdmin of
the admin site, and the parameters each of its filters expects (Django's filter specs,
``expected_parameters``), so a new list or filter is fuzzed without touching this file."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Django's own changelist parameters: page, ordering, search, all rows, the error flag.
LIST_PARAMETERS = ("p", "o", "q", "all", "e")
CHANGELISTS = sorted(
    reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    for model in admin.site._registry
)
# Values that are nearly right: times at the edges of the calendar, numbers past every
# column's range, text where a choice or an id belongs.
CRAFTED = st.sampled_from(
    ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "0001-01-01", "bogus",
     "abc", "1e400", "99999999999999999999", "-1", "", "\x00", "1,2", "True", "history",
     "2026-13-45T99:99", "1h", "NaN", "%", "'"]
)  # fmt: skip
VALUES = st.one_of(CRAFTED, st.text(max_size=30), st.integers().map(str))


def parameters_of(client: Client, url: str) -> list[str]:
    """The query parameters the list at ``url`` reads: its filters' and Django's own."""
    response = client.get(url)
    assert response.status_code == 200, url
    changelist = response.context["cl"]
    names = [name for spec in changelist.filter_specs for name in spec.expected_parameters()]
    return [*names, *LIST_PARAMETERS]


@pytest.fixture
def superuser_client(db, client):
    client.force_login(User.objects.create_superuser("root", password=None))
    return client


def test_every_list_is_found(superuser_client):
    """The discovery sees the lists (a guard against fuzzing nothing)."""
    assert len(CHANGELISTS) >= 10
    assert "/admin/mailboxes/instanceheartbeat/" in CHANGELISTS
    parameters = parameters_of(superuser_client, "/admin/mailboxes/instanceheartbeat/")
    assert "state" in parameters


@given(data=st.data())
@settings(
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_filter_value_is_a_server_error(superuser_client, data):
    url = data.draw(st.sampled_from(CHANGELISTS), label="list")
    names = parameters_of(superuser_client, url)
    query = data.draw(
        st.dictionaries(st.sampled_from(names), VALUES, min_size=1, max_size=3), label="query"
    )

    response = superuser_client.get(f"{url}?{urlencode(query)}")

    assert response.status_code in (200, 302, 400, 404), (url, query)


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("/admin/mailboxes/instanceheartbeat/", {"state": "bogus"}),
        ("/admin/mailboxes/inboundmessage/", {"since": "0001-01-01T00:00:00+14:00"}),
        ("/admin/mailboxes/inboundmessage/", {"since": "not a time"}),
        ("/admin/pricefeed/catalogueentry/", {"as_of": "0001-01-01T00:00:00+14:00"}),
        ("/admin/pricefeed/catalogueentry/", {"as_of": "9999-12-31T23:59:59-14:00"}),
    ],
)
def test_a_value_a_filter_cannot_read_is_a_400(superuser_client, url, query):
    response = superuser_client.get(f"{url}?{urlencode(query)}")

    assert response.status_code == 400
