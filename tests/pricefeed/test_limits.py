"""pricefeed.limits: the parsing library's limits, from settings."""

from __future__ import annotations

from pricefeed.limits import parse_limits
from pricefeed.parsing import Limits


def test_limits_come_from_settings_with_defaults(settings):
    settings.PRICEFEED_PARSE_MAX_ENTRIES = 10
    settings.PRICEFEED_PARSE_MAX_FILE_BYTES = 1234
    limits = parse_limits()
    assert limits.max_entries == 10
    assert limits.max_file_bytes == 1234
    assert limits.max_depth == Limits().max_depth


def test_limits_are_read_at_call_time(settings):
    settings.PRICEFEED_PARSE_MAX_ROWS = 7
    assert parse_limits().max_rows == 7
    settings.PRICEFEED_PARSE_MAX_ROWS = 8
    assert parse_limits().max_rows == 8
