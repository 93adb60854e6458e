"""core.crypto: mailbox passwords are Fernet-encrypted at rest."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from core import crypto
from core.crypto import DecryptionError
from mailboxes.models import Mailbox
from tests.factories import create_mailbox

pytestmark = pytest.mark.django_db

PASSWORD = "Пароль-от-IMAP 42!"


@pytest.fixture(autouse=True)
def fresh_fernet_cache():
    crypto._fernet.cache_clear()
    yield
    crypto._fernet.cache_clear()


def new_key() -> str:
    return Fernet.generate_key().decode()


def stored_password(pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT password FROM mailboxes_mailbox WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def saved_mailbox(password: str = PASSWORD, name: str = "m") -> Mailbox:
    return create_mailbox(name=name, password=password)


def test_password_is_stored_encrypted_in_the_database():
    mailbox = saved_mailbox()

    stored = stored_password(mailbox.pk)

    assert stored.startswith("fernet:")
    assert PASSWORD not in stored


def test_password_reads_back_as_plaintext():
    mailbox = saved_mailbox()

    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


def test_same_password_encrypts_differently_each_time():
    first, second = saved_mailbox(name="m1"), saved_mailbox(name="m2")

    assert stored_password(first.pk) != stored_password(second.pk)


def test_empty_password_is_stored_empty():
    mailbox = saved_mailbox(password="")

    assert stored_password(mailbox.pk) == ""
    assert Mailbox.objects.get(pk=mailbox.pk).password == ""


def test_plaintext_written_by_hand_in_the_database_reads_as_is():
    mailbox = saved_mailbox()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE mailboxes_mailbox SET password = %s WHERE id = %s", ["legacy", mailbox.pk]
        )

    assert Mailbox.objects.get(pk=mailbox.pk).password == "legacy"


def test_password_decrypts_after_key_rotation_with_the_old_key_second(settings):
    old, new = new_key(), new_key()
    settings.PRICEFEED_ENCRYPTION_KEYS = [old]
    mailbox = saved_mailbox()

    settings.PRICEFEED_ENCRYPTION_KEYS = [new, old]
    crypto._fernet.cache_clear()

    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


def test_resaving_after_rotation_lets_the_old_key_be_dropped(settings):
    old, new = new_key(), new_key()
    settings.PRICEFEED_ENCRYPTION_KEYS = [old]
    mailbox = saved_mailbox()
    settings.PRICEFEED_ENCRYPTION_KEYS = [new, old]
    Mailbox.objects.get(pk=mailbox.pk).save()

    settings.PRICEFEED_ENCRYPTION_KEYS = [new]
    crypto._fernet.cache_clear()

    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


def test_a_password_no_key_can_decrypt_loads_as_unreadable_and_is_kept_on_save(settings):
    old_key = new_key()
    settings.PRICEFEED_ENCRYPTION_KEYS = [old_key]
    mailbox = saved_mailbox()
    stored = stored_password(mailbox.pk)

    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    crypto._fernet.cache_clear()

    loaded = Mailbox.objects.get(pk=mailbox.pk)  # loading never raises
    assert isinstance(loaded.password, crypto.UnreadableSecret)
    assert loaded.password == ""
    assert "cannot be decrypted" in loaded.password.reason
    loaded.name = "renamed"
    loaded.save()
    assert stored_password(loaded.pk) == stored  # the ciphertext survives

    settings.PRICEFEED_ENCRYPTION_KEYS = [old_key]
    crypto._fernet.cache_clear()
    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


def test_connecting_with_an_unreadable_password_says_so_instead_of_trying(settings):
    from mailboxes.imap import ImapError, check_connection
    from mailboxes.listener import connection_settings

    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    mailbox = saved_mailbox()
    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    crypto._fernet.cache_clear()

    with pytest.raises(ImapError, match=r"cannot be decrypted.*re-enter the mailbox password"):
        check_connection(connection_settings(Mailbox.objects.get(pk=mailbox.pk)))


def test_changed_secret_key_without_explicit_keys_makes_the_password_unreadable(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = []
    mailbox = saved_mailbox()

    settings.SECRET_KEY = settings.SECRET_KEY + "-rotated"

    with pytest.raises(DecryptionError):
        crypto.decrypt(stored_password(mailbox.pk))
    assert isinstance(Mailbox.objects.get(pk=mailbox.pk).password, crypto.UnreadableSecret)
