"""Which django-q2 broker this process hands work to, as one comparable string.

Every process of an installation must use the same broker: a task enqueued on Redis is
never seen by a cluster reading the database queue, and the reverse. The fingerprint
names the broker without its credentials (it is stored in heartbeats and shown in the
admin): ``orm:default`` for the database queue, ``redis:<host>:<port>/<db>`` for Redis
(``redis:unix:<path>/<db>`` over a Unix socket). Two processes with the same broker
reached with different passwords have the same fingerprint.

check_redis_security refuses, in production, a Redis broker that anyone on the network
could read or feed: every task (a message id, an import to apply) passes through it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.core import checks

from .hosts import loopback

BROKER_SETTING = "PRICEFEED_REDIS_URL"
DEFAULT_REDIS_PORT = 6379


def fingerprint(q_cluster: dict[str, Any] | None = None) -> str:
    """The broker of ``q_cluster`` (default ``settings.Q_CLUSTER``)."""
    conf = settings.Q_CLUSTER if q_cluster is None else q_cluster
    redis = conf.get("redis")
    if redis:
        return redis_fingerprint(redis)
    return f"orm:{conf.get('orm') or 'default'}"


def redis_fingerprint(redis: str | dict[str, Any]) -> str:
    """``redis:<host>:<port>/<db>`` of a Redis URL or of redis-py connection keywords."""
    if isinstance(redis, dict):
        if redis.get("unix_socket_path"):
            return f"redis:unix:{redis['unix_socket_path']}/{int(redis.get('db') or 0)}"
        host = str(redis.get("host") or "localhost").lower()
        port = int(redis.get("port") or DEFAULT_REDIS_PORT)
        return f"redis:{host}:{port}/{int(redis.get('db') or 0)}"
    url = urlsplit(redis)
    query = parse_qs(url.query)
    if url.scheme == "unix":
        db = query.get("db", ["0"])[0]
        return f"redis:unix:{url.path}/{int(db or 0)}"
    path_db = url.path.strip("/")
    db = path_db or query.get("db", ["0"])[0]
    host = (url.hostname or "localhost").lower()
    return f"redis:{host}:{url.port or DEFAULT_REDIS_PORT}/{int(db or 0)}"


def redis_weaknesses(url: str) -> list[str]:
    """What a Redis URL lacks to be safe off this host: a password (``redis://:pw@``
    or ``?password=``), and TLS (``rediss://``) unless it reaches Redis over a Unix
    socket or a loopback address, where no one else on the network sees the traffic."""
    parts = urlsplit(url)
    weaknesses = []
    if not (parts.password or parse_qs(parts.query).get("password", [""])[0]):
        weaknesses.append("no password")
    if parts.scheme not in ("rediss", "unix") and not loopback(parts.hostname or "localhost"):
        weaknesses.append("no TLS (rediss://)")
    return weaknesses


def check_redis_security(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A system check: with DEBUG off, a Redis broker URL without a password, or
    without TLS off this host, stops every command, unless
    PRICEFEED_REDIS_ALLOW_INSECURE says it is meant (a private network of one's own)."""
    redis = settings.Q_CLUSTER.get("redis")
    if not isinstance(redis, str) or settings.DEBUG or settings.PRICEFEED_REDIS_ALLOW_INSECURE:
        return []
    weaknesses = redis_weaknesses(redis)
    if not weaknesses:
        return []
    return [
        checks.Error(
            f"PRICEFEED_REDIS_URL ({redis_fingerprint(redis)}) has {' and '.join(weaknesses)}: "
            "whoever reaches that Redis could read and enqueue pricefeed's tasks.",
            hint="Use rediss://:<password>@host:6380/0 (TLS and a password; a Unix socket or "
            "a loopback address needs only the password), or set "
            "PRICEFEED_REDIS_ALLOW_INSECURE=true if the network is yours alone.",
            id="core.E004",
        )
    ]
