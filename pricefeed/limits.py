"""The parsing library's limits, built from settings (the library itself reads none)."""

from __future__ import annotations

from dataclasses import fields

from django.conf import settings

from . import parsing

SETTING_PREFIX = "PRICEFEED_PARSE_"


def parse_limits() -> parsing.Limits:
    """Limits from the ``PRICEFEED_PARSE_<FIELD>`` settings (e.g. PRICEFEED_PARSE_MAX_ROWS),
    each falling back to the library's default; read at call time."""
    defaults = parsing.Limits()
    values: dict[str, int] = {
        f.name: getattr(settings, SETTING_PREFIX + f.name.upper(), getattr(defaults, f.name))
        for f in fields(parsing.Limits)
    }
    return parsing.Limits(**values)
