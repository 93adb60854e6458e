"""core.crypto: mailbox passwords are Fernet-encrypted at rest."""

from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core import checks
from django.core.management import call_command
from django.core.management.base import CommandError
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


# -- keys: which one encrypts, which ones decrypt -----------------------------------------


def decrypts_with(key: Fernet, pk: int) -> bool:
    try:
        key.decrypt(stored_password(pk).removeprefix(crypto.PREFIX).encode())
    except InvalidToken:
        return False
    return True


def test_new_passwords_are_encrypted_with_the_first_key(settings):
    first, second = new_key(), new_key()
    settings.PRICEFEED_ENCRYPTION_KEYS = [first, second]

    mailbox = saved_mailbox()

    assert decrypts_with(Fernet(first.encode()), mailbox.pk)
    assert not decrypts_with(Fernet(second.encode()), mailbox.pk)
    assert not decrypts_with(crypto._derived_key(settings.SECRET_KEY), mailbox.pk)


def test_without_keys_the_key_derived_from_secret_key_encrypts(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = []

    mailbox = saved_mailbox()

    assert decrypts_with(crypto._derived_key(settings.SECRET_KEY), mailbox.pk)


def test_password_saved_before_secret_key_rotation_decrypts_with_the_key_in_fallbacks(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = []
    mailbox = saved_mailbox()
    old_secret_key = settings.SECRET_KEY

    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 50
    settings.SECRET_KEY_FALLBACKS = [old_secret_key]
    crypto._fernet.cache_clear()

    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


def test_password_saved_under_secret_key_still_decrypts_once_keys_are_set(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = []  # the demo, or a test install
    mailbox = saved_mailbox()

    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    crypto._fernet.cache_clear()

    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


# -- manage.py reencrypt_secrets -----------------------------------------------------------


def reencrypt() -> str:
    out = io.StringIO()
    call_command("reencrypt_secrets", stdout=out)
    return out.getvalue()


def test_reencrypt_puts_every_password_under_the_first_key_so_the_old_one_can_go(settings):
    old, new = new_key(), new_key()
    settings.PRICEFEED_ENCRYPTION_KEYS = [old]
    first, second = saved_mailbox(name="m1"), saved_mailbox(name="m2")
    settings.PRICEFEED_ENCRYPTION_KEYS = [new, old]
    crypto._fernet.cache_clear()

    output = reencrypt()

    assert "mailboxes.Mailbox.password: 2 re-encrypted, 0 already current" in output
    settings.PRICEFEED_ENCRYPTION_KEYS = [new]
    crypto._fernet.cache_clear()
    assert Mailbox.objects.get(pk=first.pk).password == PASSWORD
    assert Mailbox.objects.get(pk=second.pk).password == PASSWORD


def test_reencrypt_after_a_secret_key_rotation_frees_the_fallback(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = []
    mailbox = saved_mailbox()
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 50
    crypto._fernet.cache_clear()

    reencrypt()

    settings.SECRET_KEY_FALLBACKS = []
    crypto._fernet.cache_clear()
    assert Mailbox.objects.get(pk=mailbox.pk).password == PASSWORD


def test_reencrypt_leaves_current_and_empty_passwords_alone(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    current = saved_mailbox(name="m1")
    saved_mailbox(name="m2", password="")
    before = stored_password(current.pk)

    output = reencrypt()

    assert "0 re-encrypted, 1 already current" in output
    assert stored_password(current.pk) == before


def test_reencrypt_encrypts_a_password_written_in_clear_by_hand():
    mailbox = saved_mailbox()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE mailboxes_mailbox SET password = %s WHERE id = %s", ["legacy", mailbox.pk]
        )

    reencrypt()

    assert stored_password(mailbox.pk).startswith(crypto.PREFIX)
    assert Mailbox.objects.get(pk=mailbox.pk).password == "legacy"


def test_reencrypt_fails_naming_a_password_no_key_decrypts_and_keeps_it(settings):
    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    lost = saved_mailbox(name="lost")
    stored = stored_password(lost.pk)
    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key()]
    crypto._fernet.cache_clear()
    readable = saved_mailbox(name="readable")

    with pytest.raises(CommandError, match=rf"mailboxes\.Mailbox\.password pk={lost.pk}\b"):
        reencrypt()

    assert stored_password(lost.pk) == stored
    assert Mailbox.objects.get(pk=readable.pk).password == PASSWORD


# -- the system check ------------------------------------------------------------------


def test_check_requires_keys_with_debug_off_and_says_how_to_make_one(settings):
    settings.DEBUG = False
    settings.PRICEFEED_ENCRYPTION_KEYS = []

    errors = crypto.check_encryption_keys()

    assert [e.id for e in errors] == ["core.E001"]
    assert "Fernet.generate_key()" in errors[0].hint


def test_check_lets_debug_run_on_the_key_derived_from_secret_key(settings):
    settings.DEBUG = True
    settings.PRICEFEED_ENCRYPTION_KEYS = []

    assert crypto.check_encryption_keys() == []


def test_check_refuses_a_key_that_is_no_fernet_key_without_printing_it(settings):
    settings.DEBUG = True
    settings.PRICEFEED_ENCRYPTION_KEYS = [new_key(), "not-a-fernet-key-but-a-secret"]

    errors = crypto.check_encryption_keys()

    assert [e.id for e in errors] == ["core.E002"]
    assert "key 2 of 2" in errors[0].msg
    assert "not-a-fernet-key" not in f"{errors[0].msg} {errors[0].hint}"


def test_check_runs_with_every_command(settings):
    settings.DEBUG = False
    settings.PRICEFEED_ENCRYPTION_KEYS = []

    ids = [message.id for message in checks.run_checks()]

    assert "core.E001" in ids
