"""Webhook signatures: HMAC-SHA256 over the timestamp and the body.

A request carries ``X-Pricefeed-Timestamp: <unix seconds>`` and
``X-Pricefeed-Signature: v1=<hex>``, the hex digest of HMAC-SHA256 keyed with the
webhook's secret over ``b"<timestamp>." + body`` (the body's bytes as sent). ``verify``
is what a receiver runs; it uses nothing but the standard library, so it can be copied
as it is (docs/delivery.md).
"""

from __future__ import annotations

import hashlib
import hmac
import time

SCHEME = "v1"


def signature(secret: str, timestamp: int | str, body: bytes) -> str:
    """The ``X-Pricefeed-Signature`` value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{SCHEME}={mac.hexdigest()}"


def verify(
    secret: str,
    timestamp: int | str,
    body: bytes,
    signature: str,
    *,
    window: int = 300,
    now: float | None = None,
) -> bool:
    """Whether ``body`` was signed with ``secret`` at ``timestamp`` (the request's
    X-Pricefeed-Timestamp) no more than ``window`` seconds from ``now`` (default: this
    moment), either way. ``signature`` is the X-Pricefeed-Signature header; it may list
    several comma-separated ``v1=`` values (any one matching will do).

    A receiver also drops an event whose id (X-Pricefeed-Event-Id) it has seen: a
    delivery can come again, with the same id, after a retry or a crash."""
    raw = str(timestamp).strip()
    try:
        sent = int(raw)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > window:
        return False
    mac = hmac.new(secret.encode(), f"{raw}.".encode() + body, hashlib.sha256).hexdigest()
    for part in signature.split(","):
        scheme, _, value = part.strip().partition("=")
        if scheme == "v1" and hmac.compare_digest(value.strip().encode(), mac.encode()):
            return True
    return False
