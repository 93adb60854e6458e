"""mailboxes.models: a stored password never follows its mailbox to another server,
whatever path saves the change."""

from __future__ import annotations

import pytest

from mailboxes.models import Mailbox
from tests.factories import MAILBOX

pytestmark = pytest.mark.django_db

STORED = MAILBOX["password"]


def stored_password(mailbox: Mailbox) -> str:
    return Mailbox.objects.get(pk=mailbox.pk).password


@pytest.mark.parametrize(
    "change",
    [
        {"host": "imap.other.example"},
        {"port": 994},
        {"security": Mailbox.Security.PLAIN},
        {"username": "someone-else"},
    ],
)
def test_saving_another_server_with_the_stored_password_clears_it(mailbox, change):
    for name, value in change.items():
        setattr(mailbox, name, value)

    mailbox.save()

    assert stored_password(mailbox) == ""
    assert mailbox.password == ""


def test_saving_only_the_changed_server_field_clears_the_password_too(mailbox):
    mailbox.host = "imap.other.example"

    mailbox.save(update_fields=["host"])

    assert stored_password(mailbox) == ""


def test_a_new_password_given_with_the_new_server_is_kept(mailbox):
    mailbox.host = "imap.other.example"
    mailbox.password = "for-the-other-server"

    mailbox.save()

    assert stored_password(mailbox) == "for-the-other-server"


def test_the_same_password_set_for_the_new_server_is_kept(mailbox):
    mailbox.host = "imap.other.example"
    mailbox.set_password(STORED)

    mailbox.save()

    assert stored_password(mailbox) == STORED


def test_set_password_before_a_server_change_does_not_cover_it(mailbox):
    mailbox.set_password(STORED)
    mailbox.host = "imap.other.example"

    mailbox.save()

    assert stored_password(mailbox) == ""


def test_saving_the_same_server_keeps_the_password(mailbox):
    mailbox.folder = "Prices"
    mailbox.enabled = False

    mailbox.save()

    assert stored_password(mailbox) == STORED


def test_saves_of_other_fields_only_keep_the_password(mailbox):
    Mailbox.objects.filter(pk=mailbox.pk).update(host="imap.moved.example")
    mailbox.enabled = False  # this instance still holds the old host

    mailbox.save(update_fields=["enabled", "updated_at"])

    stored = Mailbox.objects.get(pk=mailbox.pk)
    assert (stored.host, stored.enabled, stored.password) == ("imap.moved.example", False, STORED)
