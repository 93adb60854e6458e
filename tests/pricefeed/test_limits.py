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


def test_the_hostile_file_limits_come_from_their_settings(settings):
    settings.PRICEFEED_PARSE_MAX_COLUMNS = 64
    settings.PRICEFEED_PARSE_MAX_LINE_BYTES = 4096
    settings.PRICEFEED_PARSE_MAX_SECONDS = 30
    limits = parse_limits()
    assert (limits.max_columns, limits.max_line_bytes, limits.max_seconds) == (64, 4096, 30)


def test_every_limit_has_a_setting_named_in_its_messages(settings):
    """Each Limits field is read from PRICEFEED_PARSE_<FIELD>, the name limit_name() gives
    operators in a refusal."""
    from dataclasses import fields

    from pricefeed import parsing

    for f in fields(Limits):
        name = parsing.limit_name(f.name).split("setting ")[1]
        assert hasattr(settings, name), name
        assert getattr(parse_limits(), f.name) == getattr(settings, name)
