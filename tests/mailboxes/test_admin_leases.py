"""Admin pages for who listens where: leases and instances, with their actions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from mailboxes import leases
from mailboxes.models import InboundMessage, InstanceHeartbeat, Mailbox, MailboxLease
from tests.factories import create_config, create_mailbox

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

LEASES_URL = "admin:mailboxes_mailboxlease_changelist"
INSTANCES_URL = "admin:mailboxes_instanceheartbeat_changelist"


def rows(response) -> dict[str, list[str]]:
    """The changelist as {first column: [the other cells]}."""
    assert response.status_code == 200
    cl = response.context["cl"]
    from django.contrib.admin.templatetags.admin_list import items_for_result
    from django.utils.html import strip_tags

    table = {}
    for obj in cl.result_list:
        cells = [strip_tags(str(c)).strip() for c in items_for_result(cl, obj, None)]
        table[cells[1]] = cells[2:]  # cells[0] is the action checkbox
    return table


@pytest.fixture
def two_mailboxes(db) -> tuple[Mailbox, Mailbox]:
    heavy = create_mailbox(name="heavy")
    light = create_mailbox(name="light", weight=7)
    for n in range(3):
        create_config(heavy, name=f"c{n}")
    create_config(heavy, name="off", enabled=False)
    return heavy, light


def test_lease_list_shows_owner_token_expiry_and_weight(admin_client, two_mailboxes):
    heavy, light = two_mailboxes
    leases.lease_acquire(mailbox_id=heavy.pk, owner="host-a:1", ttl=30)
    leases.lease_acquire(mailbox_id=light.pk, owner="host-b:2", ttl=30)
    MailboxLease.objects.filter(mailbox=light).update(
        expires_at=timezone.now() - timedelta(seconds=90)
    )

    table = rows(admin_client.get(reverse(LEASES_URL)))

    state, owner, token, expires_in, weight, _renewed = table["heavy"]
    assert (state, owner, token, weight) == ("held", "host-a:1", "1", "3")  # 3 enabled configs
    assert expires_in.endswith(" s") and 25 <= int(expires_in.split()[0]) <= 30
    state, owner, _token, expires_in, weight, _renewed = table["light"]
    assert (state, owner, weight) == ("free", "host-b:2", "7")  # the override wins
    assert expires_in.startswith("expired 9")


def test_instance_list_tells_live_from_dead_and_what_each_holds(admin_client, two_mailboxes):
    heavy, light = two_mailboxes
    leases.heartbeat(instance_id="host-a:1")
    leases.heartbeat(instance_id="host-b:2")
    leases.heartbeat(instance_id="host-c:3", stopping=True)
    InstanceHeartbeat.objects.filter(instance_id="host-b:2").update(
        last_seen=timezone.now() - timedelta(minutes=5)
    )
    leases.lease_acquire(mailbox_id=heavy.pk, owner="host-a:1", ttl=30)
    leases.lease_acquire(mailbox_id=light.pk, owner="host-a:1", ttl=30)
    for n, status in enumerate(["RECEIVED", "PROCESSING", "DONE", "RECEIVED"]):
        InboundMessage.objects.create(
            mailbox=light if n < 3 else heavy,
            folder="INBOX",
            uidvalidity=1,
            uid=n + 1,
            dedup_key=f"k{n}",
            status=status,
        )

    table = rows(admin_client.get(reverse(INSTANCES_URL)))

    assert table["host-a:1"][:5] == ["live", "just now", "2", "10", "3"]
    assert table["host-b:2"][0] == "dead"
    assert table["host-b:2"][2:4] == ["0", "0"]
    assert table["host-c:3"][0] == "stopped"


def test_force_release_makes_the_owners_next_renewal_fail(admin_client, two_mailboxes):
    heavy, _light = two_mailboxes
    lease = leases.lease_acquire(mailbox_id=heavy.pk, owner="host-a:1", ttl=30)

    admin_client.post(
        reverse(LEASES_URL),
        {
            "action": "force_release",
            "_selected_action": [MailboxLease.objects.get(mailbox=heavy).pk],
        },
    )

    # Nobody else may take it yet: the owner may still be listening until it renews.
    assert leases.lease_acquire(mailbox_id=heavy.pk, owner="host-b:2", ttl=30) is None
    assert leases.leases_renew(leases=[lease], owner="host-a:1", ttl=30) == set()
    # The owner releases once its listener has stopped; then it is anyone's.
    assert leases.lease_release(lease=lease)
    taken = leases.lease_acquire(mailbox_id=heavy.pk, owner="host-b:2", ttl=30)
    assert taken is not None and taken.token == lease.token + 1
    assert MailboxLease.objects.get(mailbox=heavy).release_requested is False


def test_owner_cannot_take_back_a_lease_it_was_asked_to_release(two_mailboxes):
    heavy, _light = two_mailboxes
    leases.lease_acquire(mailbox_id=heavy.pk, owner="host-a:1", ttl=30)
    leases.leases_request_release(mailbox_ids=[heavy.pk])

    assert leases.lease_acquire(mailbox_id=heavy.pk, owner="host-a:1", ttl=30) is None


def test_disable_mailbox_action_disables_it(admin_client, two_mailboxes):
    heavy, light = two_mailboxes
    leases.lease_acquire(mailbox_id=heavy.pk, owner="host-a:1", ttl=30)

    admin_client.post(
        reverse(LEASES_URL),
        {
            "action": "disable_mailbox",
            "_selected_action": [MailboxLease.objects.get(mailbox=heavy).pk],
        },
    )

    heavy.refresh_from_db()
    light.refresh_from_db()
    assert (heavy.enabled, light.enabled) == (False, True)
    table = rows(admin_client.get(reverse(LEASES_URL)))
    assert table["heavy"][0] == "mailbox disabled"
