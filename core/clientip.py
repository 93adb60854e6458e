"""The client address django-axes counts failed logins by (AXES_CLIENT_IP_CALLABLE):
X-Forwarded-For is believed only from PRICEFEED_TRUSTED_PROXIES (core.hosts)."""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.http import HttpRequest

from .hosts import client_address, parse_networks


@cache
def _trusted(values: tuple[str, ...]):
    return parse_networks(list(values))


def request_client_address(request: HttpRequest) -> str | None:
    return client_address(
        request.META.get("REMOTE_ADDR"),
        request.META.get("HTTP_X_FORWARDED_FOR"),
        _trusted(tuple(settings.PRICEFEED_TRUSTED_PROXIES)),
    )
