"""core.logs: one line per record, with its context keys, that no input can forge."""

from __future__ import annotations

import json
import logging

from core.logs import JsonFormatter, TextFormatter, escape, first_line

FORGED = "Прайс\n2026-01-01 00:00:00,000 ERROR core.alerts [MainThread] forged\x1b[2J"


def record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    return logging.getLogger("pricefeed.intake").makeRecord(
        "pricefeed.intake", logging.WARNING, __file__, 1, msg, args, None, extra=extra
    )


def test_text_lines_end_with_the_extra_keys_as_key_value():
    line = TextFormatter().format(
        record("message processed status=%s", "DONE", action="message_processed", message_id=42)
    )

    assert " WARNING pricefeed.intake [" in line
    assert line.endswith("] message processed status=DONE action=message_processed message_id=42")


def test_a_key_the_message_already_states_is_not_repeated():
    line = TextFormatter().format(
        record("message processed message_id=%s", 42, action="message_processed", message_id=42)
    )

    assert line.endswith("] message processed message_id=42 action=message_processed")


def test_text_without_extras_is_the_message_alone():
    line = TextFormatter().format(record("sweep messages expired_claims=%s", 0))

    assert line.endswith("] sweep messages expired_claims=0")


def test_a_newline_or_escape_in_an_argument_or_an_extra_cannot_start_a_line_of_its_own():
    line = TextFormatter().format(
        record("message rejected subject=%s", FORGED, action="rejected", from_header=FORGED)
    )

    assert "\n" not in line
    assert "\x1b" not in line
    escaped = "Прайс\\n2026-01-01 00:00:00,000 ERROR core.alerts [MainThread] forged\\x1b[2J"
    assert line.endswith(
        f"] message rejected subject={escaped} action=rejected from_header={escaped}"
    )


def test_escape_covers_carriage_returns_and_unicode_line_separators():
    assert escape("a\rb\u2028c\u2029d\te\x7f") == "a\\rb\\u2028c\\u2029d\\te\\x7f"
    assert escape("Болт М8 ½") == "Болт М8 ½"


def test_json_records_parse_and_carry_the_extra_keys():
    text = JsonFormatter().format(
        record("import failed id=%s: %s", 7, FORGED, action="import_failed", import_id=7)
    )

    assert "\n" not in text
    fields = json.loads(text)
    assert fields["message"] == f"import failed id=7: {FORGED}"
    assert (fields["level"], fields["logger"]) == ("WARNING", "pricefeed.intake")
    assert (fields["action"], fields["import_id"]) == ("import_failed", 7)
    assert "time" in fields


def test_first_line_of_an_exception_or_its_class_name():
    assert first_line(OSError("connection refused\nmore detail")) == "connection refused"
    assert first_line(TimeoutError()) == "TimeoutError"
