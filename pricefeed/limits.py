"""The parsing library's limits, built from settings (the library itself reads none)."""

from __future__ import annotations

from dataclasses import fields

from django.conf import settings

from core.texts import Text, gettext_noop

from . import parsing

SETTING_PREFIX = parsing.SETTING_PREFIX  # the library names limits by these settings
# Stored and shown in English, translated where it is shown (pricefeed.texts).
FILE_TOO_LARGE = gettext_noop(
    "the file is %(size)s bytes, over the %(limit)s-byte limit (%(setting)s)"
)


def parse_limits() -> parsing.Limits:
    """Limits from the ``PRICEFEED_PARSE_<FIELD>`` settings (e.g. PRICEFEED_PARSE_MAX_ROWS),
    each falling back to the library's default; read at call time."""
    defaults = parsing.Limits()
    values: dict[str, int] = {
        f.name: getattr(settings, SETTING_PREFIX + f.name.upper(), getattr(defaults, f.name))
        for f in fields(parsing.Limits)
    }
    return parsing.Limits(**values)


def file_size_problem(size: int) -> str | None:
    """Why a file of ``size`` bytes is not read (over PRICEFEED_PARSE_MAX_FILE_BYTES), or
    None; for callers that know the size before they hold the bytes (uploads)."""
    limit = parse_limits().max_file_bytes
    if size > limit:
        return Text(
            FILE_TOO_LARGE, size=size, limit=limit, setting=parsing.limit_name("max_file_bytes")
        )
    return None
