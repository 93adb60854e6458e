"""What every admin list of the apps shares (core.adminutils): the lists' stylesheet,
times as ages with the absolute time on hover, and audit records that only superusers
delete."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from access.roles import ADMINISTRATOR, OPERATOR, VIEWER
from devkit.samples import price_list_csv
from fleet import services as fleet
from fleet.models import ProcessKind
from mailboxes import leases
from notifications import services as notifications
from notifications.models import Subscription
from outbox import services as outbox
from outbox.handlers import NOOP
from tests.access.support import logged_in, offered
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")

# Read-only history: no Delete but for superusers.
AUDIT = [
    "mailboxes_inboundmessage",
    "mailboxes_instanceheartbeat",
    "fleet_processheartbeat",
    "pricefeed_priceimport",
    "outbox_outboxevent",
    "notifications_notification",
]
# Every list of the apps (price items: see test_price_items_are_deleted_by_nobody).
LISTS = [
    *AUDIT,
    "mailboxes_mailbox",
    "mailboxes_mailboxlease",
    "pricefeed_pricelistconfig",
    "pricefeed_priceitem",
    "notifications_subscription",
]


@pytest.fixture
def everything(mailbox, config) -> None:
    """A row in every list: a message with an import and its items, a notification and
    its send event, a lease, both kinds of heartbeat."""
    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    notifications.notifications_fan_out(import_id=price_import.pk)
    with transaction.atomic():
        outbox.publish(NOOP, mailbox, {"n": 1})
    leases.instance_started(instance_id="host-a:1")
    leases.lease_acquire(mailbox_id=mailbox.pk, owner="host-a:1", ttl=30)
    fleet.process_register(
        process_id="qcluster:a", kind=ProcessKind.QCLUSTER, pid=1, broker="orm:default"
    )


def first_pk(client, changelist: str) -> object:
    return client.get(reverse(f"admin:{changelist}_changelist")).context["cl"].result_list[0].pk


def superuser(client):
    client.force_login(User.objects.create_superuser("root"))
    return client


@pytest.mark.parametrize("changelist", LISTS)
def test_every_list_has_the_lists_stylesheet_and_shows_times_as_ages(
    admin_client, everything, changelist
):
    response = admin_client.get(reverse(f"admin:{changelist}_changelist"))

    assert response.status_code == 200
    content = response.content.decode()
    assert 'href="/static/pricefeed/admin/lists.css"' in content
    # Never a bare 12-hour time: "p.m." / "a.m." is Django's default format of one.
    assert not re.search(r"\d (a|p)\.m\.", content)


@pytest.mark.parametrize(
    "changelist",
    [
        "mailboxes_inboundmessage",
        "mailboxes_instanceheartbeat",
        "fleet_processheartbeat",
        "pricefeed_priceimport",
        "outbox_outboxevent",
        "notifications_notification",
        "mailboxes_mailboxlease",
    ],
)
def test_lists_with_times_show_them_as_ages_with_the_time_and_zone_on_hover(
    admin_client, everything, changelist
):
    content = admin_client.get(reverse(f"admin:{changelist}_changelist")).content.decode()

    assert re.search(
        r'<time class="pf-when" datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">'
        r"(just now|in under a minute|\d+\xa0\w+ ago|in \d+\xa0\w+)</time>",
        content,
    )


@pytest.mark.parametrize("changelist", AUDIT)
@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMINISTRATOR])
def test_audit_records_are_not_deleted_by_any_role(client, everything, role, changelist):
    client = logged_in(client, role)
    pk = first_pk(client, changelist)
    delete = reverse(f"admin:{changelist}_delete", args=[pk])
    change = reverse(f"admin:{changelist}_change", args=[pk])

    assert "delete_selected" not in offered(client, reverse(f"admin:{changelist}_changelist"))
    assert 'class="deletelink"' not in client.get(change).content.decode()
    assert client.get(delete).status_code == 403
    client.post(delete, {"post": "yes"})
    assert first_pk(client, changelist) == pk


@pytest.mark.parametrize("changelist", AUDIT)
def test_a_superuser_deletes_audit_records(client, everything, changelist):
    client = superuser(client)
    pk = first_pk(client, changelist)
    delete = reverse(f"admin:{changelist}_delete", args=[pk])

    assert "delete_selected" in offered(client, reverse(f"admin:{changelist}_changelist"))
    assert (
        'class="deletelink"'
        in client.get(reverse(f"admin:{changelist}_change", args=[pk])).content.decode()
    )
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert pk not in {
        row.pk
        for row in client.get(reverse(f"admin:{changelist}_changelist")).context["cl"].result_list
    }


def test_price_items_are_deleted_by_nobody_not_even_a_superuser(client, everything):
    client = superuser(client)

    assert "delete_selected" not in offered(client, reverse("admin:pricefeed_priceitem_changelist"))
