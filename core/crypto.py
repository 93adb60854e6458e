"""Secrets at rest: a model field that stores its value Fernet-encrypted.

Keys come from ``PRICEFEED_ENCRYPTION_KEYS`` (the first encrypts, every key decrypts, so
rotation is "put the new key first, re-save, drop the old one"); without them a key is
derived from ``SECRET_KEY`` with HKDF, so a fresh install is encrypted by default.
"""

from __future__ import annotations

import base64
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


class DecryptionError(Exception):
    """A stored secret cannot be decrypted with any configured key."""


@cache
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    if keys:
        return MultiFernet([Fernet(k.encode()) for k in keys])
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"pricefeed-secrets", info=b"fernet"
    ).derive(secret_key.encode())
    return MultiFernet([Fernet(base64.urlsafe_b64encode(derived))])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.PRICEFEED_ENCRYPTION_KEYS), settings.SECRET_KEY)


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
