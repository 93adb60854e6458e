"""Tools some tests need from the machine (Dovecot, redis-server, Chromium, gettext, nginx):
where one is missing the test is skipped, saying what to install; under CI, which sets
PRICEFEED_REQUIRE_<TOOL>=1, a missing tool is a broken setup and the test fails."""

from __future__ import annotations

import os
import shutil

import pytest

from devkit.servers.dovecot import DovecotServer
from devkit.servers.redis import RedisServer


def require(what: str, available: bool, variable: str, install: str) -> None:
    if available:
        return
    if os.environ.get(variable) == "1":
        pytest.fail(f"{what} is required ({variable}=1) but not installed")
    pytest.skip(f"{what} not installed: {install}")


def require_dovecot() -> None:
    require(
        "Dovecot",
        DovecotServer.available(),
        "PRICEFEED_REQUIRE_DOVECOT",
        "apt-get install dovecot-imapd (./scripts/test does)",
    )


def require_redis() -> None:
    require(
        "redis-server",
        RedisServer.available(),
        "PRICEFEED_REQUIRE_REDIS",
        "apt-get install redis-server (./scripts/test does)",
    )


def rabbitmq_available(host: str = "127.0.0.1", port: int = 5672) -> bool:
    import socket

    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


def require_rabbitmq() -> None:
    """RabbitMQ listening on 127.0.0.1:5672 (guest/guest)."""
    require(
        "RabbitMQ on 127.0.0.1:5672",
        rabbitmq_available(),
        "PRICEFEED_REQUIRE_RABBITMQ",
        "apt-get install rabbitmq-server and start it (.ci/run does)",
    )


def require_gettext() -> None:
    """GNU gettext's xgettext and msgmerge, which makemessages runs."""
    require(
        "GNU gettext (xgettext, msgmerge)",
        bool(shutil.which("xgettext") and shutil.which("msgmerge")),
        "PRICEFEED_REQUIRE_GETTEXT",
        "apt-get install gettext (./scripts/test does)",
    )


def require_chromium() -> str:
    """The Chromium binary (Debian's; Playwright downloads no browser here)."""
    path = shutil.which("chromium")
    require(
        "Chromium",
        path is not None,
        "PRICEFEED_REQUIRE_CHROMIUM",
        "apt-get install chromium (./scripts/test does)",
    )
    assert path is not None
    return path


def require_nginx() -> str:
    """Debian's nginx, for the test of the TLS proxy example (deploy/nginx.conf)."""
    path = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    require(
        "nginx",
        path is not None,
        "PRICEFEED_REQUIRE_NGINX",
        "apt-get install nginx (./scripts/test does)",
    )
    assert path is not None
    return path
