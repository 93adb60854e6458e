"""JSON for programs, the browsable API for people."""

from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer


class ContentNegotiation(DefaultContentNegotiation):
    """A request with an Authorization header (a program with a token) gets JSON even
    when it accepts HTML; the browsable API is for people in the admin's session.
    Content is chosen before the request is authenticated, hence the header."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if request.META.get("HTTP_AUTHORIZATION"):
            renderers = [r for r in renderers if not isinstance(r, BrowsableAPIRenderer)]
        return super().select_renderer(request, renderers, format_suffix)
