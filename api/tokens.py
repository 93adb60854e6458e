"""API tokens: made with their key shown once, found by the key's SHA-256, and marked as
used at most once a minute (a read-only API should not write on every request)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db.models import Q
from django.utils import timezone

from .models import ApiToken

# "pf_" names the key's issuer (a secret scanner can look for it), then 256 random bits.
KEY_PREFIX = "pf_"
PREFIX_SHOWN = 10  # the characters of a key kept in the clear: "pf_" and 7 of the secret
LAST_USED_EVERY = timedelta(minutes=1)


def key_hash(key: str) -> str:
    """What is stored of a key: its SHA-256, in hex. The key is 256 random bits, so a
    plain hash (no salt, no stretching) is enough: nothing to guess from it."""
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(
    *, user: User, name: str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token of ``user`` and its key, which is returned here and never again."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[:PREFIX_SHOWN],
        key_hash=key_hash(key),
        expires_at=expires_at,
    )
    return token, key


def token_key_assign(token: ApiToken) -> str:
    """Gives an unsaved token (the admin's form) a new key and returns the key."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token.prefix = key[:PREFIX_SHOWN]
    token.key_hash = key_hash(key)
    return key


def token_by_key(key: str) -> ApiToken | None:
    """The token with this key and its user, or None; revoked and expired ones too
    (the caller refuses them with a reason)."""
    return ApiToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()


def token_touch(token: ApiToken, *, now: datetime | None = None) -> None:
    """Records that the token was used now, unless that was recorded less than a minute
    ago (conditional: of two requests at once, one writes)."""
    now = now or timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_EVERY:
        return
    ApiToken.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_EVERY), pk=token.pk
    ).update(last_used_at=now)
    token.last_used_at = now


def token_revoke(token: ApiToken, *, now: datetime | None = None) -> None:
    """The token is refused from now on."""
    now = now or timezone.now()
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now)
    token.refresh_from_db(fields=["revoked_at"])
