"""An optional request rate per token (PRICEFEED_API_RATE)."""

from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle

from .authentication import token_of


class TokenRateThrottle(SimpleRateThrottle):
    """At most the ``api`` rate of requests per token (people in a session: per user).
    The counts are in Django's cache, which is each process's memory unless a shared
    cache is configured: with N web workers a client may make up to N times the rate."""

    scope = "api"

    def get_cache_key(self, request, view):
        token = token_of(request)
        if token is not None:
            ident = f"token-{token.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            return None  # refused anyway (401)
        return self.cache_format % {"scope": self.scope, "ident": ident}
