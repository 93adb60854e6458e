"""System checks of the notifications app."""

from __future__ import annotations

from django.core import checks


def public_url(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Every command refuses to start with a PRICEFEED_PUBLIC_URL that is no absolute
    http(s) URL: every mail would carry a broken link to its import. Empty is allowed
    (mails then carry no link) and documented, not warned about."""
    from django.conf import settings

    from .content import public_url_problem

    problem = public_url_problem(settings.PRICEFEED_PUBLIC_URL)
    if problem:
        return [
            checks.Error(
                problem,
                hint="e.g. https://pricefeed.example.com, or empty for mails without a link",
                id="notifications.E001",
            )
        ]
    return []
