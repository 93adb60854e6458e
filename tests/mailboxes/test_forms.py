"""mailboxes.forms: MailboxForm keeps the password write-only and checks the port."""

from __future__ import annotations

import pytest

from mailboxes.forms import MailboxForm
from mailboxes.models import Mailbox

pytestmark = pytest.mark.django_db


def data(**overrides: object) -> dict:
    values = {
        "name": "Поставщик",
        "enabled": "on",
        "host": "imap.supplier.example",
        "port": "993",
        "security": Mailbox.Security.SSL,
        "username": "buyer",
        "password": "new-secret",
        "folder": "INBOX",
        "backfill": Mailbox.Backfill.ALL,
        "weight": "",
    }
    values.update(overrides)
    return values


def test_new_mailbox_with_password_is_valid_and_saved():
    form = MailboxForm(data=data())

    assert form.is_valid(), form.errors
    mailbox = form.save()
    assert Mailbox.objects.get(pk=mailbox.pk).password == "new-secret"


def test_new_mailbox_requires_a_password():
    form = MailboxForm(data=data(password=""))

    assert not form.is_valid()
    assert form.errors["password"] == ["A password is required for a new mailbox."]


def test_blank_password_on_edit_keeps_the_stored_one(mailbox):
    form = MailboxForm(data=data(password="", username="renamed"), instance=mailbox)

    assert form.is_valid(), form.errors
    form.save()
    stored = Mailbox.objects.get(pk=mailbox.pk)
    assert stored.password == "s3cret-imap-password"
    assert stored.username == "renamed"


def test_password_given_on_edit_replaces_the_stored_one(mailbox):
    form = MailboxForm(data=data(password="rotated"), instance=mailbox)

    assert form.is_valid(), form.errors
    form.save()
    assert Mailbox.objects.get(pk=mailbox.pk).password == "rotated"


def test_password_is_never_rendered_back_into_the_form(mailbox):
    html = MailboxForm(instance=mailbox).as_p()

    assert "s3cret-imap-password" not in html
    assert "fernet:" not in html


def test_ssl_on_port_143_is_flagged_on_the_port():
    form = MailboxForm(data=data(security=Mailbox.Security.SSL, port="143"))

    assert not form.is_valid()
    assert form.errors["port"] == ["Port 143 normally speaks STARTTLS or plain, not SSL/TLS."]


@pytest.mark.parametrize("security", [Mailbox.Security.STARTTLS, Mailbox.Security.PLAIN])
def test_starttls_or_plain_on_port_993_is_flagged_on_the_port(security):
    form = MailboxForm(data=data(security=security, port="993"))

    assert not form.is_valid()
    assert form.errors["port"] == ["Port 993 normally speaks implicit SSL/TLS."]


@pytest.mark.parametrize("security", [Mailbox.Security.STARTTLS, Mailbox.Security.PLAIN])
def test_starttls_or_plain_on_port_143_is_accepted(security):
    form = MailboxForm(data=data(security=security, port="143"))

    assert form.is_valid(), form.errors
