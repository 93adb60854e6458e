"""mailboxes.mimebudget and the bounded header reading: hostile structure is refused by
name before the email parser sees it, and recording reads a bounded part of a header."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from mailboxes.exceptions import MessageRefused
from mailboxes.mime import FIELD_READ_LIMIT, header_fields, parse_message, split_headers
from mailboxes.mimebudget import MimeBudget, check_structure, mime_budget

WORD = "=?utf-8?b?" + base64.b64encode("Прайс".encode()).decode() + "?="


def multipart(*parts: bytes, boundary: bytes = b"b") -> bytes:
    body = b"".join(b"--" + boundary + b"\r\n" + p + b"\r\n" for p in parts)
    return (
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="
        + boundary
        + b"\r\n\r\n"
        + body
        + b"--"
        + boundary
        + b"--\r\n"
    )


def attachment(filename: bytes, data: bytes = b"sku;price\r\n1;2") -> bytes:
    return (
        b'Content-Type: text/csv\r\nContent-Disposition: attachment; filename="'
        + filename
        + b'"\r\n\r\n'
        + data
    )


def nested(depth: int) -> bytes:
    raw = b"Content-Type: multipart/mixed; boundary=b0\r\n\r\n"
    for level in range(1, depth):
        raw += b"--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n" % (level - 1, level)
    return raw


def refusal(raw: bytes, budget: MimeBudget | None = None) -> str:
    with pytest.raises(MessageRefused) as caught:
        check_structure(raw, budget or MimeBudget())
    return str(caught.value)


def test_a_normal_price_mail_fits_the_budget_and_counts_its_parts():
    raw = multipart(b"Content-Type: text/plain\r\n\r\nhello", attachment(b"price.csv"))

    assert check_structure(raw, MimeBudget()) == 3
    (att,) = parse_message(raw).attachments
    assert att.filename == "price.csv"


def test_nesting_deeper_than_the_budget_is_refused_by_name():
    assert "PRICEFEED_MIME_MAX_DEPTH" in refusal(nested(2000))
    assert check_structure(nested(5), MimeBudget(max_depth=5)) == 5


def test_nesting_that_only_the_parser_would_find_is_refused_not_crashed():
    # The budget allows the depth, the parser's recursion does not: a refusal, not a
    # RecursionError taken for a transient failure.
    with pytest.raises(MessageRefused, match="nested too deep"):
        parse_message(nested(2000), MimeBudget(max_depth=10_000, max_parts=10_000))


def test_a_content_type_the_email_parser_crashes_on_is_refused_with_the_reason():
    # The stdlib raises IndexError on it: deterministic, so a refusal rather than an
    # error that would be retried.
    with pytest.raises(MessageRefused, match="the email parser cannot read the message"):
        parse_message(multipart(b"Content-Type: text/csv; name*\r\n\r\nx"))
    # The same in a Content-Disposition is read by get_filename, which says so.
    parsed = parse_message(multipart(b"Content-Disposition: attachment; filename*\r\n\r\nx"))
    assert [w for w in parsed.warnings if "unreadable filename" in w]


def test_the_parts_of_a_digest_count_as_messages():
    inner = b"Content-Type: multipart/mixed; boundary=i\r\n\r\n--i\r\n\r\nx\r\n--i--\r\n"
    raw = (
        b"Content-Type: multipart/digest; boundary=d\r\n\r\n--d\r\n\r\n" + inner + b"\r\n--d--\r\n"
    )
    # digest (0) -> a message part (1) -> its multipart (2) -> a leaf (3)
    assert "PRICEFEED_MIME_MAX_DEPTH" in refusal(raw, MimeBudget(max_depth=2))
    assert check_structure(raw, MimeBudget(max_depth=3)) == 4


def test_too_many_parts_are_refused_by_name():
    raw = multipart(*[attachment(b"p%d.csv" % i) for i in range(20)])

    assert "PRICEFEED_MIME_MAX_PARTS" in refusal(raw, MimeBudget(max_parts=10))
    assert check_structure(raw, MimeBudget(max_parts=21)) == 21


def test_a_filename_of_many_encoded_words_is_refused_before_decoding():
    many = " ".join([WORD] * 32_000).encode()

    assert "PRICEFEED_MIME_MAX_" in refusal(multipart(attachment(many)))
    words = " ".join([WORD] * 101).encode()
    reason = refusal(multipart(attachment(words)), MimeBudget())
    assert "content-disposition" in reason
    assert "PRICEFEED_MIME_MAX_ENCODED_WORDS" in reason
    (att,) = parse_message(multipart(attachment(" ".join([WORD] * 100).encode()))).attachments
    assert att.filename == "Прайс" * 100


def test_a_header_with_thousands_of_parameters_is_refused_by_name():
    params = b"".join(b"; p%d=v" % i for i in range(20_000))
    raw = b"Content-Type: text/plain" + params + b"\r\n\r\nx"

    reason = refusal(raw)
    assert "content-type" in reason
    assert "PRICEFEED_MIME_MAX_PARAMS" in reason


def test_comments_in_a_content_type_are_refused_before_the_quadratic_parser_sees_them():
    # 30,000 "(a)" took the email parser a minute of CPU (gh-136063); the count refuses
    # them at once, by name.
    raw = multipart(b"Content-Type: text/csv" + b"(a)" * 30_000 + b"\r\n\r\nx")

    reason = refusal(raw)
    assert "content-type" in reason
    assert "PRICEFEED_MIME_MAX_COMMENTS" in reason
    budget = MimeBudget(max_comments=100, max_content_field_bytes=10**6)
    assert "PRICEFEED_MIME_MAX_COMMENTS" in refusal(
        multipart(b"Content-Type: text/csv" + b"(a)" * 101 + b"\r\n\r\nx"), budget
    )
    assert check_structure(
        multipart(b"Content-Type: text/csv" + b"(a)" * 100 + b"\r\n\r\nx"), budget
    )


def test_quoted_strings_in_a_filename_are_refused_by_name():
    quoted = b'"a"' * 20_000

    reason = refusal(multipart(attachment(quoted)), MimeBudget(max_content_field_bytes=10**6))
    assert "content-disposition" in reason
    assert "PRICEFEED_MIME_MAX_COMMENTS" in reason


def test_quotes_and_parentheses_in_other_fields_are_not_counted():
    # The email parser never parses a Subject or a To as structured here: recording
    # reads them from the raw bytes.
    raw = b"Subject: " + b'"(x)" ' * 500 + b"\r\nTo: " + b'"A" <a@b.c>, ' * 300 + b"\r\n\r\nx"

    assert check_structure(raw, MimeBudget()) == 1


def test_a_long_content_type_or_disposition_is_refused_by_name():
    long_name = b"; name=" + b"a " * 3000
    reason = refusal(b"Content-Type: text/csv" + long_name + b"\r\n\r\nx")
    assert "content-type" in reason
    assert "PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES" in reason
    assert "PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES" in refusal(multipart(attachment(b"a" * 5000)))


def test_the_content_fields_of_the_whole_message_have_a_budget():
    parts = [attachment(b"p%d.csv" % i + b" " * 3000) for i in range(10)]

    reason = refusal(multipart(*parts), MimeBudget(max_content_bytes=20_000))
    assert "PRICEFEED_MIME_MAX_CONTENT_BYTES" in reason
    assert check_structure(multipart(*parts), MimeBudget(max_content_bytes=40_000)) == 11


def test_a_long_cyrillic_filename_as_mail_programs_write_it_fits_the_budget():
    # 255 characters, RFC 2231 in continuations (Thunderbird) and as encoded words in
    # the Content-Type's name (Outlook): both well under the caps.
    name = "Прайс-лист ООО «Ромашка» (опт, розница) от 04.12.2026 " * 5
    name = name[:251] + ".xls"
    pieces = [
        urllib.parse.quote(name[i : i + 20].encode(), safe="") for i in range(0, len(name), 20)
    ]
    continued = ";\r\n ".join(
        f"filename*{i}*={'utf-8' + chr(39) * 2 if i == 0 else ''}{p}" for i, p in enumerate(pieces)
    )
    words = " ".join(
        "=?utf-8?b?" + base64.b64encode(name[i : i + 20].encode()).decode() + "?="
        for i in range(0, len(name), 20)
    )
    part = (
        f'Content-Type: application/vnd.ms-excel;\r\n name="{words}"\r\n'
        f"Content-Disposition: attachment;\r\n {continued}\r\n\r\n"
    ).encode() + b"x"

    assert check_structure(multipart(part), MimeBudget()) == 2
    (att,) = parse_message(multipart(part)).attachments
    assert att.filename == name


def test_a_huge_header_block_and_too_many_fields_are_refused_by_name():
    assert "PRICEFEED_MIME_MAX_HEADER_BYTES" in refusal(
        b"X-Pad: " + b"a" * 300_000 + b"\r\n\r\nbody"
    )
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(600))
    assert "PRICEFEED_MIME_MAX_HEADER_FIELDS" in refusal(fields + b"\r\nbody")


def test_the_budget_comes_from_settings(settings):
    settings.PRICEFEED_MIME_MAX_DEPTH = 3
    settings.PRICEFEED_MIME_MAX_CPU_SECONDS = 1.5

    budget = mime_budget()

    assert (budget.max_depth, budget.max_cpu_seconds) == (3, 1.5)


# -- the fields a record keeps, read in bounded time -------------------------------------


def test_a_subject_of_120k_encoded_words_is_cut_before_it_is_decoded():
    header = (
        "From: Поставщик <prices@supplier.ru>\r\n"
        "Message-ID: <bomb@supplier.ru>\r\n"
        "Subject: " + "\r\n ".join([WORD] * 120_000) + "\r\n\r\n"
    ).encode()

    fields = header_fields(split_headers(header + b"body"))

    # Only the first FIELD_READ_LIMIT bytes were decoded, and no half word is left over.
    assert fields.subject == "Прайс" * (FIELD_READ_LIMIT // (len(WORD) + 1))
    assert (fields.from_address, fields.message_id) == ("prices@supplier.ru", "<bomb@supplier.ru>")


def test_folded_fields_are_unfolded_and_the_first_of_each_is_kept():
    header = (
        b"Subject: " + WORD.encode() + b"\r\n\t" + WORD.encode() + b"\r\n plain\r\n"
        b"Subject: second\r\nfrom: x <Q@E.RU>\r\n\r\n"
    )

    fields = header_fields(header)

    assert fields.subject == "ПрайсПрайс plain"
    assert fields.from_address == "q@e.ru"
