"""Who may run the mailbox pages' actions and download a raw message: each role's group,
and a staff user in none. A refused action is neither offered nor run when POSTed."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from access.roles import ADMINISTRATOR, OPERATOR, VIEWER
from devkit.samples import price_list_csv
from mailboxes import leases
from mailboxes.models import InboundMessage, Mailbox, MailboxLease
from notifications.models import Notification
from pricefeed.models import PriceItem
from tests.access.support import ROLES, at_least, each_role, logged_in, offered, run_action
from tests.factories import MAILBOX, ROWS, receive, run_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_queue")]

Status = InboundMessage.Status
MESSAGES = reverse("admin:mailboxes_inboundmessage_changelist")
MAILBOXES = reverse("admin:mailboxes_mailbox_changelist")
LEASES = reverse("admin:mailboxes_mailboxlease_changelist")


@pytest.fixture
def held_lease(mailbox) -> MailboxLease:
    leases.lease_acquire(mailbox_id=mailbox.pk, owner="host-a:1", ttl=30)
    return MailboxLease.objects.get(mailbox=mailbox)


@each_role
def test_reprocess_is_an_operators(client, role, make_message):
    message = make_message(status=Status.FAILED)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("reprocess" in offered(client, MESSAGES)) == allowed
    run_action(client, MESSAGES, "reprocess", message.pk)

    message.refresh_from_db()
    assert message.status == (Status.RECEIVED if allowed else Status.FAILED)


@each_role
def test_mark_failed_is_an_operators(client, role, make_message):
    message = make_message(status=Status.RETRYABLE)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("mark_failed" in offered(client, MESSAGES)) == allowed
    run_action(client, MESSAGES, "mark_failed", message.pk)

    message.refresh_from_db()
    assert message.status == (Status.FAILED if allowed else Status.RETRYABLE)


@each_role
def test_force_release_is_an_operators(client, role, held_lease):
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("force_release" in offered(client, LEASES)) == allowed
    run_action(client, LEASES, "force_release", held_lease.pk)

    held_lease.refresh_from_db()
    assert held_lease.release_requested is allowed


@each_role
def test_disable_mailbox_is_an_administrators(client, role, held_lease):
    """Disabling changes the mailbox: it asks for change_mailbox, which operators lack."""
    client = logged_in(client, role)
    allowed = at_least(role, ADMINISTRATOR)

    assert ("disable_mailbox" in offered(client, LEASES)) == allowed
    run_action(client, LEASES, "disable_mailbox", held_lease.pk)

    assert Mailbox.objects.get(pk=held_lease.mailbox_id).enabled is not allowed


@each_role
def test_test_connection_is_an_operators(client, role, mailbox):
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("test_connection" in offered(client, MAILBOXES)) == allowed
    run_action(client, MAILBOXES, "test_connection", mailbox.pk)

    mailbox.refresh_from_db()
    assert (mailbox.test_requested_at is not None) is allowed


@each_role
def test_raw_message_download_needs_view_permission_on_messages(client, role, make_message):
    message = make_message()
    client = logged_in(client, role)

    response = client.get(reverse("admin:mailboxes_inboundmessage_raw", args=[message.pk]))

    if at_least(role, VIEWER):
        assert response.status_code == 200
        assert response.content == bytes(InboundMessage.objects.get(pk=message.pk).raw)
    else:
        assert response.status_code == 403


@pytest.mark.parametrize("role", [VIEWER, OPERATOR])
def test_view_only_mailbox_page_does_not_show_the_password(client, role, mailbox):
    client = logged_in(client, role)

    response = client.get(reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert MAILBOX["username"] in content
    assert MAILBOX["password"] not in content


def test_mailbox_form_keeps_its_write_only_password_field_for_administrators(client, mailbox):
    client = logged_in(client, ADMINISTRATOR)

    response = client.get(reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk]))

    content = response.content.decode()
    assert 'type="password" name="password"' in content
    assert MAILBOX["password"] not in content


@each_role
def test_an_administrator_deletes_a_mailbox_with_its_lease_and_configs(
    client, role, held_lease, config
):
    client = logged_in(client, role)
    url = reverse("admin:mailboxes_mailbox_delete", args=[held_lease.mailbox_id])

    client.post(url, {"post": "yes"})

    assert Mailbox.objects.filter(pk=held_lease.mailbox_id).exists() is (role != ADMINISTRATOR)


@pytest.mark.parametrize("role", [*ROLES, "superuser"], ids=lambda role: role or "no group")
def test_only_a_superuser_deletes_a_message_with_its_imports_and_their_notifications(
    client, role, mailbox, config
):
    message = receive(mailbox, [("p.csv", price_list_csv(ROWS))])
    (price_import,) = run_all(message)
    Notification.objects.create(
        kind="import_outcome", price_import=price_import, recipient="buyer@example.com"
    )
    if role == "superuser":
        client.force_login(User.objects.create_superuser("root"))
    else:
        client = logged_in(client, role)
    url = reverse("admin:mailboxes_inboundmessage_delete", args=[message.pk])

    client.post(url, {"post": "yes"})

    deleted = role == "superuser"
    assert InboundMessage.objects.filter(pk=message.pk).exists() is not deleted
    assert Notification.objects.exists() is not deleted
    assert PriceItem.objects.of_import(price_import.pk).exists() is not deleted
