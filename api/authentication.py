"""Programs sign in with ``Authorization: Token <key>`` (or ``Bearer <key>``): the key's
SHA-256 is looked up, and the request acts as the token's user."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from .models import ApiToken
from .tokens import token_by_key, token_touch

KEYWORDS = (b"token", b"bearer")


class TokenAuthentication(authentication.BaseAuthentication):
    """An API token (api.models.ApiToken) in the Authorization header. A request without
    one is left to the next authentication (the admin session); a bad, revoked or
    expired one, or one whose user is inactive, is refused (401)."""

    def authenticate(self, request: Request):
        words = authentication.get_authorization_header(request).split()
        if not words or words[0].lower() not in KEYWORDS:
            return None
        if len(words) != 2:
            raise exceptions.AuthenticationFailed(
                _("Invalid token header: give the scheme and the key, separated by a space.")
            )
        try:
            key = words[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        token = token_by_key(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.usable():
            raise exceptions.AuthenticationFailed(_("The token is revoked or expired."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("The token's user is inactive."))
        token_touch(token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # Named in the 401's WWW-Authenticate (without it DRF answers 403).
        return 'Token realm="api"'


def token_of(request: Request) -> ApiToken | None:
    """The token a request signed in with (None: a session)."""
    return request.auth if isinstance(request.auth, ApiToken) else None
