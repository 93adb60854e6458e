"""Feed tokens: random, shown once, stored as their SHA-256 only."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.db.models.functions import Now

from .models import Feed


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def feed_token_renew(feed: Feed) -> str:
    """Gives ``feed`` a new token (the old one stops working at once) and returns it: the
    only time it exists outside the requester's hands."""
    token = secrets.token_urlsafe(32)
    Feed.objects.filter(pk=feed.pk).update(
        token_hash=token_hash(token), token_issued_at=Now(), updated_at=Now()
    )
    feed.refresh_from_db(fields=["token_hash", "token_issued_at", "updated_at"])
    return token


def feed_for_token(token: str) -> Feed | None:
    """The enabled feed of ``token``, else None (unknown, renewed or switched off alike)."""
    if not 20 <= len(token) <= 100:
        return None
    wanted = token_hash(token)
    feed = Feed.objects.select_related("customer_group").filter(token_hash=wanted).first()
    if feed is None or not feed.enabled or feed.token_hash is None:
        return None
    if not hmac.compare_digest(feed.token_hash, wanted):
        return None
    return feed
