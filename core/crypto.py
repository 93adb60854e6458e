"""Secrets at rest: a model field that stores its value Fernet-encrypted.

The first key of ``PRICEFEED_ENCRYPTION_KEYS`` encrypts; without any (DEBUG, the demo) a
key derived from ``SECRET_KEY`` with HKDF does, so even a fresh install stores nothing
in clear. Every configured key decrypts, and so do the keys derived from ``SECRET_KEY``
and from each of ``SECRET_KEY_FALLBACKS``: rotating either kind of key is "put the new
one first (the old one after it, or in the fallbacks), run ``manage.py
reencrypt_secrets``, drop the old one" (``secrets_reencrypt``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.apps import apps
from django.conf import settings
from django.core import checks
from django.db import models, transaction
from django.db.models.functions import Cast

PREFIX = "fernet:"

GENERATE_KEY = (
    'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
)


class DecryptionError(Exception):
    """A stored secret cannot be decrypted with any configured key."""


def _derived_key(secret_key: str) -> Fernet:
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"pricefeed-secrets", info=b"fernet"
    ).derive(secret_key.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


@cache
def _fernet(keys: tuple[str, ...], secret_key: str, fallbacks: tuple[str, ...] = ()) -> MultiFernet:
    # MultiFernet encrypts with the first and tries them all, in this order.
    return MultiFernet(
        [
            *(Fernet(k.encode()) for k in keys),
            *(_derived_key(secret) for secret in (secret_key, *fallbacks)),
        ]
    )


def fernet() -> MultiFernet:
    return _fernet(
        tuple(settings.PRICEFEED_ENCRYPTION_KEYS),
        settings.SECRET_KEY,
        tuple(settings.SECRET_KEY_FALLBACKS),
    )


def _current_key() -> Fernet:
    """The key that encrypts: the one a stored secret is re-encrypted under."""
    keys = settings.PRICEFEED_ENCRYPTION_KEYS
    return Fernet(keys[0].encode()) if keys else _derived_key(settings.SECRET_KEY)


def encrypt(plaintext: str) -> str:
    return PREFIX + fernet().encrypt(plaintext.encode()).decode()


def decrypt(stored: str) -> str:
    if not stored.startswith(PREFIX):
        # Written before encryption was in place, or by hand in the database.
        return stored
    try:
        return fernet().decrypt(stored[len(PREFIX) :].encode()).decode()
    except InvalidToken as exc:
        raise DecryptionError(
            "stored secret cannot be decrypted: SECRET_KEY or PRICEFEED_ENCRYPTION_KEYS "
            "changed since it was saved"
        ) from exc


def check_encryption_keys(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A system check (registered by mailboxes, whose passwords these keys guard): with
    DEBUG off PRICEFEED_ENCRYPTION_KEYS is required, so that stored secrets do not hang
    on SECRET_KEY; every key given must be a Fernet key. The keys are never printed."""
    errors: list[checks.CheckMessage] = []
    keys = settings.PRICEFEED_ENCRYPTION_KEYS
    if not keys and not settings.DEBUG:
        errors.append(
            checks.Error(
                "PRICEFEED_ENCRYPTION_KEYS is not set: mailbox passwords would be "
                "encrypted under a key derived from SECRET_KEY.",
                hint=f"Generate a key with {GENERATE_KEY} and set PRICEFEED_ENCRYPTION_KEYS "
                "to it (the same on every instance).",
                id="core.E001",
            )
        )
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key.encode())
        except ValueError:
            errors.append(
                checks.Error(
                    f"PRICEFEED_ENCRYPTION_KEYS: key {position} of {len(keys)} is not a "
                    "Fernet key (32 bytes, url-safe base64-encoded: 44 characters).",
                    hint=f"Generate one with {GENERATE_KEY}",
                    id="core.E002",
                )
            )
    return errors


class UnreadableSecret(str):
    """A stored secret no configured key can decrypt: reads as "", keeps the ciphertext.

    Loading it never raises (one bad row must not stop every mailbox), saving it again
    writes the original ciphertext back (so restoring the old key still recovers it), and
    ``reason`` says what is wrong.
    """

    stored: str
    reason: str

    def __new__(cls, stored: str, reason: str) -> UnreadableSecret:
        secret = super().__new__(cls, "")
        secret.stored = stored
        secret.reason = reason
        return secret


class EncryptedTextField(models.TextField):
    """A text field encrypted at rest; the attribute holds plaintext.

    Assigning plaintext works; the database only ever sees ``fernet:<token>``.
    """

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        try:
            return decrypt(value)
        except DecryptionError as exc:
            return UnreadableSecret(value, str(exc))

    def get_prep_value(self, value):
        if isinstance(value, UnreadableSecret):
            return value.stored
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(value)


@dataclass
class ReencryptResult:
    """What ``secrets_reencrypt`` did, per ``app_label.Model.field``."""

    reencrypted: dict[str, int] = field(default_factory=dict)
    current: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, list[object]] = field(default_factory=dict)


def encrypted_fields() -> list[tuple[type[models.Model], EncryptedTextField]]:
    """Every ``EncryptedTextField`` of every installed model."""
    return [
        (model, f)
        for model in apps.get_models()
        for f in model._meta.concrete_fields
        if isinstance(f, EncryptedTextField)
    ]


def secrets_reencrypt(*, batch_size: int = 100) -> ReencryptResult:
    """Re-encrypts every stored secret that the current key (the first of
    ``PRICEFEED_ENCRYPTION_KEYS``, else the one derived from ``SECRET_KEY``) did not
    encrypt, so that the keys rotated out can be dropped; plaintext written by hand is
    encrypted too. A secret no configured key decrypts is left as it is and listed in
    ``unreadable`` by primary key. Each batch of rows is locked while it is rewritten,
    so a password saved in the admin meanwhile is never overwritten with the old one.
    """
    result = ReencryptResult()
    current = _current_key()
    for model, secret_field in encrypted_fields():
        name = f"{model._meta.label}.{secret_field.name}"
        manager = model._default_manager
        column = secret_field.attname
        pks = list(
            manager.exclude(**{f"{column}__isnull": True})
            .exclude(**{column: ""})
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        result.reencrypted[name] = result.current[name] = 0
        for start in range(0, len(pks), batch_size):
            with transaction.atomic():
                rows = (
                    manager.select_for_update()
                    .filter(pk__in=pks[start : start + batch_size])
                    # The column as stored: the field would decrypt it.
                    .annotate(stored=Cast(column, output_field=models.TextField()))
                    .values_list("pk", "stored")
                )
                for pk, stored in rows:
                    if not stored:
                        continue
                    if stored.startswith(PREFIX):
                        token = stored[len(PREFIX) :].encode()
                        try:
                            current.decrypt(token)
                        except InvalidToken:
                            pass
                        else:
                            result.current[name] += 1
                            continue
                    try:
                        plaintext = decrypt(stored)
                    except DecryptionError:
                        result.unreadable.setdefault(name, []).append(pk)
                        continue
                    # The field encrypts it on the way in, with the current key.
                    manager.filter(pk=pk).update(**{column: plaintext})
                    result.reencrypted[name] += 1
    return result
