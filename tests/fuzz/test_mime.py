"""Properties of mailboxes.mime: what it reads from generated mail, and that nothing it
returns from hostile bytes is unfit for the database (NUL, unbounded, unencodable)."""

from __future__ import annotations

import hashlib
from email import policy

from hypothesis import example, given
from hypothesis import strategies as st

from mailboxes.exceptions import MessageRefused
from mailboxes.mime import (
    PARSER_BUGS,
    HeaderFields,
    _fast_payload,
    attachment_payload,
    header_fields,
    parse_message,
    split_headers,
)
from mailboxes.mimebudget import MimeBudget, check_structure

from .strategies import content_field_values, header_blocks, mails, mutated

# The columns the values end in (mailboxes.models.InboundMessage and
# pricefeed.models.PriceImport; test_bounds_are_the_model_columns checks them).
COLUMNS = {
    "message_id": 998,
    "from_header": 998,
    "subject": 998,
    "from_address": 320,
    "filename": 500,
    "content_type": 255,
}
# Warnings and defects are short reasons kept in a JSON report.
REASON_BOUND = 2000

raw_mail = mails().map(lambda spec: spec.raw)
hostile_mail = st.one_of(
    st.binary(max_size=2000),
    mutated(raw_mail),
    st.builds(bytes.__add__, header_blocks(), raw_mail),
)


def assert_storable(text: object, limit: int) -> None:
    """A value a PostgreSQL text column takes: a str, no NUL, valid UTF-8, bounded."""
    assert isinstance(text, str), repr(text)
    assert "\x00" not in text, f"NUL in {text!r}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise AssertionError(f"lone surrogate (an undecodable byte) in {text!r}") from None
    assert len(text) <= limit, f"{len(text)} characters, more than {limit}: {text[:80]!r}..."


def assert_clean_fields(fields: HeaderFields) -> None:
    assert_storable(fields.message_id, COLUMNS["message_id"])
    for name in ("from_header", "subject", "from_address"):
        assert_storable(getattr(fields, name), COLUMNS[name])
        assert "\r" not in getattr(fields, name) and "\n" not in getattr(fields, name)
    assert_storable(fields.date, 998)
    assert fields.sent_at is None or fields.sent_at.tzinfo is not None


@given(mails())
def test_well_formed_mail_reads_back_and_both_attachment_readers_agree(spec):
    parsed = parse_message(spec.raw)

    assert parsed.structural_defects == []
    assert [(a.key, a.filename) for a in parsed.attachments] == [
        (key, filename) for key, filename, _ in spec.attachments
    ]
    for key, _, payload in spec.attachments:
        assert parsed.payloads[key] == payload
        # The quick reader takes every base64 attachment of a well-formed message itself.
        assert _fast_payload(spec.raw, key) == payload
        assert attachment_payload(spec.raw, key) == payload
        assert attachment_payload(spec.raw, key, quick=False) == payload
    fields = header_fields(split_headers(spec.raw))
    assert fields.subject == spec.subject
    assert fields.from_address == spec.from_address
    assert fields.message_id == spec.message_id
    assert fields.sent_at == spec.sent_at


@given(st.one_of(header_blocks(), st.binary(max_size=2000)))
def test_header_fields_of_any_header_block_are_storable(block):
    assert_clean_fields(header_fields(block))


@given(st.text(min_size=1, max_size=8).filter(lambda name: not name.isascii()))
@example("\x80")
def test_an_encoded_word_in_an_unknown_charset_is_kept(charset):
    for name in (b"From", b"Subject"):
        block = name + b": =?" + charset.encode() + b"?B?+A?=\r\n\r\n"
        assert_clean_fields(header_fields(block))


@given(st.integers(0, 1500))
@example(997)
def test_message_id_fits_its_column(length):
    fields = header_fields(b"Message-ID: " + b"a" * length + b"\r\n\r\n")
    assert len(fields.message_id) <= COLUMNS["message_id"]


@given(hostile_mail)
def test_any_bytes_are_read_or_refused_and_what_is_read_is_storable(raw):
    try:
        parsed = parse_message(raw)
    except MessageRefused as exc:
        assert_storable(str(exc), REASON_BOUND)
        return
    assert_clean_fields(parsed.headers)
    for attachment in parsed.attachments:
        assert attachment.key.startswith("part") and attachment.key[4:].isdigit()
        assert_storable(attachment.filename, COLUMNS["filename"])
        assert_storable(attachment.content_type, COLUMNS["content_type"])
        payload = parsed.payloads[attachment.key]
        assert attachment.size == len(payload)
        assert attachment.sha256 == hashlib.sha256(payload).hexdigest()
    for reason in parsed.structural_defects + parsed.warnings:
        assert_storable(reason, REASON_BOUND)


@given(hostile_mail)
@example(b"From \r \x00")
@example(b"From \r \x80")
@example(b" " + b"x" * 3000 + b"\r\n\r\n")
def test_defects_and_warnings_are_storable(raw):
    try:
        parsed = parse_message(raw)
    except MessageRefused:
        return
    for reason in parsed.structural_defects + parsed.warnings:
        assert_storable(reason, REASON_BOUND)


@given(hostile_mail)
def test_quick_reader_never_contradicts_the_email_parser(raw):
    """The quick reader hands a message to the parser whenever it is unsure; when it
    does answer, the answer is the parser's."""
    try:
        parsed = parse_message(raw)
    except MessageRefused:
        return
    for attachment in parsed.attachments:
        assert attachment_payload(raw, attachment.key) == parsed.payloads[attachment.key]


def test_bounds_are_the_model_columns():
    from mailboxes.models import InboundMessage
    from pricefeed.models import PriceImport

    for model, names in (
        (InboundMessage, ("message_id", "from_header", "subject", "from_address")),
        (PriceImport, ("filename", "content_type")),
    ):
        for name in names:
            assert getattr(model._meta.get_field(name), "max_length", None) == COLUMNS[name]


def assert_refused_or_filename_unreadable(field: bytes, budget: MimeBudget) -> None:
    raw = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
    raw += field + b"\r\n\r\nx\r\n--b--\r\n"
    try:
        parsed = parse_message(raw, budget)
    except MessageRefused as exc:
        assert "the email parser cannot read the message" in str(exc)
        return
    assert any("unreadable filename" in warning for warning in parsed.warnings)


def _parser_counts(token) -> int:
    """Comments and quoted strings in the email parser's parse tree of a field."""
    own = getattr(token, "token_type", None) in ("comment", "bare-quoted-string")
    children = token if isinstance(token, list) else []
    return int(own) + sum(_parser_counts(child) for child in children)


@given(
    st.sampled_from([b"Content-Type: text/csv; name=", b"Content-Disposition: attachment; x="]),
    content_field_values,
)
@example(b"Content-Type: text/csv; name=", b"(a)" * 6)
@example(b"Content-Disposition: attachment; x=", b'"a"' * 6)
@example(b"Content-Type: text/csv; name=", b";\x00*")
@example(b"Content-Disposition: attachment; x=", b";\x00*")
def test_a_content_field_the_budget_passes_is_short_and_has_few_comments_for_the_parser(
    head, value
):
    """The budget counts before the parser reads: whatever it lets through holds no more
    comments and quoted strings, as the parser finds them, than the budget allows (so
    the parser's quadratic path stays short), and is no longer than the cap."""
    budget = MimeBudget(max_comments=5, max_content_field_bytes=200)
    field = head + value
    try:
        check_structure(field + b"\r\n\r\nbody", budget)
    except MessageRefused as exc:
        assert_storable(str(exc), REASON_BOUND)
        return
    name, _, text = field.decode("ascii", "surrogateescape").partition(": ")
    unfolded = text.replace("\r\n", "")
    assert len(field.replace(b"\r\n", b"")) <= budget.max_content_field_bytes
    try:
        parsed = policy.default.header_factory(name, unfolded)
    except PARSER_BUGS:
        # The parser's own bugs ("name*" with no value): a message with such a
        # Content-Type is refused, such a Content-Disposition's filename is unreadable.
        assert_refused_or_filename_unreadable(field, budget)
        return
    assert _parser_counts(parsed._parse_tree) <= budget.max_comments
