"""mailboxes.mime: header fields for the record, attachments and defects for matching."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from email.message import EmailMessage

import pytest

from mailboxes.mime import attachment_payload, header_fields, parse_message, split_headers

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def encoded_word(text: str, charset: str) -> str:
    return f"=?{charset}?B?{base64.b64encode(text.encode(charset)).decode()}?="


def price_mail(
    attachments: list[tuple[str, bytes]],
    *,
    subject: str = "Прайс-лист",
    sender: str = "Поставщик <Prices@Supplier.RU>",
    message_id: str = "<p1@supplier.ru>",
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "buyer@pricefeed.example"
    msg["Subject"] = subject
    msg["Date"] = "Mon, 03 Jun 2024 10:15:00 +0300"
    msg["Message-ID"] = message_id
    msg.set_content("Добрый день, прайс во вложении.")
    for filename, data in attachments:
        maintype, subtype = XLSX.split("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return msg


# -- header_fields ----------------------------------------------------------------------------


def test_message_id_is_kept_with_angle_brackets():
    fields = header_fields(b"Message-ID: <abc@supplier.ru>\r\n\r\n")

    assert fields.message_id == "<abc@supplier.ru>"


def test_message_id_without_angle_brackets_is_normalised():
    fields = header_fields(b"Message-ID:   abc@supplier.ru  \r\n\r\n")

    assert fields.message_id == "<abc@supplier.ru>"


def test_folded_message_id_is_unfolded():
    fields = header_fields(b"Message-ID:\r\n <abc@supplier.ru>\r\n\r\n")

    assert fields.message_id == "<abc@supplier.ru>"


def test_missing_message_id_is_empty_string():
    fields = header_fields(b"From: a@b.c\r\nSubject: hi\r\n\r\n")

    assert fields.message_id == ""


@pytest.mark.parametrize("charset", ["utf-8", "windows-1251", "koi8-r"])
def test_rfc2047_encoded_subject_is_decoded(charset):
    raw = f"Subject: {encoded_word('Прайс-лист на июнь', charset)}\r\n\r\n".encode()

    assert header_fields(raw).subject == "Прайс-лист на июнь"


def test_rfc2047_quoted_printable_subject_mixed_with_plain_text_is_decoded():
    raw = b"Subject: =?utf-8?Q?=D0=9F=D1=80=D0=B0=D0=B9=D1=81?= 2024\r\n\r\n"

    assert header_fields(raw).subject == "Прайс 2024"


@pytest.mark.parametrize("charset", ["utf-8", "windows-1251", "koi8-r"])
def test_rfc2047_encoded_from_display_name_is_decoded(charset):
    name = encoded_word("Торговый дом Поставщик", charset)
    raw = f"From: {name} <sales@supplier.ru>\r\n\r\n".encode()

    fields = header_fields(raw)

    assert fields.from_header == "Торговый дом Поставщик <sales@supplier.ru>"
    assert fields.from_address == "sales@supplier.ru"


def test_raw_utf8_subject_is_decoded():
    # RFC 6532 (SMTPUTF8) allows UTF-8 in header values without encoded words; such mail
    # is common from Russian senders and must still match a "Прайс*" subject pattern.
    raw = "Subject: Прайс-лист\r\nFrom: Иван <ivan@supplier.ru>\r\n\r\n".encode()

    fields = header_fields(raw)

    assert fields.subject == "Прайс-лист"
    assert fields.from_header == "Иван <ivan@supplier.ru>"


def test_from_address_is_lower_cased():
    fields = header_fields(b"From: Sales Dept <Sales@Supplier.RU>\r\n\r\n")

    assert fields.from_address == "sales@supplier.ru"
    assert fields.from_header == "Sales Dept <Sales@Supplier.RU>"


def test_from_address_is_the_real_address_not_one_in_an_encoded_display_name():
    # The display name decodes to "prices@supplier.ru"; the mailbox is attacker@evil.example.
    # Reading the address out of the decoded text lets anyone pass a *@supplier.ru rule.
    raw = b"From: =?utf-8?q?prices=40supplier=2Eru?= <attacker@evil.example>\r\n\r\n"

    assert header_fields(raw).from_address == "attacker@evil.example"


def test_from_without_an_address_gives_empty_from_address():
    fields = header_fields(b"From: undisclosed-recipients:;\r\n\r\n")

    assert fields.from_address == ""


def test_nul_bytes_are_stripped_from_header_values():
    raw = b"Subject: Pr\x00ice =?utf-8?Q?li=00st?=\r\nMessage-ID: <a\x00b@x>\r\n\r\n"

    fields = header_fields(raw)

    assert "\x00" not in fields.subject
    assert fields.subject == "Price list"
    assert fields.message_id == "<ab@x>"


def test_newlines_are_stripped_from_folded_and_encoded_header_values():
    raw = b"Subject: price\r\n list =?utf-8?Q?a=0D=0Ab?=\r\n\r\n"

    fields = header_fields(raw)

    assert "\n" not in fields.subject and "\r" not in fields.subject
    assert fields.subject.startswith("price")
    assert fields.subject.endswith("a  b")


def test_valid_date_gives_an_aware_sent_at():
    fields = header_fields(b"Date: Mon, 03 Jun 2024 10:15:00 +0300\r\n\r\n")

    assert fields.date == "Mon, 03 Jun 2024 10:15:00 +0300"
    assert fields.sent_at == datetime(2024, 6, 3, 7, 15, tzinfo=UTC)


@pytest.mark.parametrize("date", ["next tuesday", "Mon, 99 Foo 2024 99:99:99 +0300", "32"])
def test_unparsable_date_gives_no_sent_at(date):
    fields = header_fields(f"Date: {date}\r\n\r\n".encode())

    assert fields.sent_at is None
    assert fields.date == date


def test_missing_date_gives_no_sent_at():
    assert header_fields(b"Subject: x\r\n\r\n").sent_at is None


def test_broken_encoded_word_with_unknown_charset_does_not_raise():
    fields = header_fields(b"Subject: =?x-no-such-charset?B?0J/RgNCw0LnRgQ==?=\r\n\r\n")

    assert isinstance(fields.subject, str)


def test_split_headers_returns_the_header_block_only():
    raw = b"Subject: x\r\nFrom: a@b.c\r\n\r\nbody\r\n\r\nmore"

    assert split_headers(raw) == b"Subject: x\r\nFrom: a@b.c\r\n\r\n"


# -- parse_message: attachments ---------------------------------------------------------------


def test_attachments_are_listed_in_mime_order_with_part_keys():
    raw = price_mail(
        [("прайс_опт.xlsx", b"one"), ("остатки.xlsx", b"two"), ("прайс_розница.xlsx", b"3")]
    ).as_bytes()

    parsed = parse_message(raw)

    # part0 is multipart/mixed, part1 the text body.
    assert [(a.key, a.filename) for a in parsed.attachments] == [
        ("part2", "прайс_опт.xlsx"),
        ("part3", "остатки.xlsx"),
        ("part4", "прайс_розница.xlsx"),
    ]
    assert all(a.content_type == XLSX for a in parsed.attachments)


def test_attachment_size_and_sha256_are_of_the_decoded_payload():
    data = bytes(range(256)) * 10
    raw = price_mail([("прайс.xlsx", data)]).as_bytes()

    (att,) = parse_message(raw).attachments

    assert att.size == len(data)
    assert att.sha256 == hashlib.sha256(data).hexdigest()


def test_header_fields_of_a_parsed_message_are_filled():
    raw = price_mail([("прайс.xlsx", b"x")]).as_bytes()

    headers = parse_message(raw).headers

    assert headers.subject == "Прайс-лист"
    assert headers.from_address == "prices@supplier.ru"
    assert headers.message_id == "<p1@supplier.ru>"


RFC2231_MESSAGE = (
    b"From: prices@supplier.ru\r\n"
    b"Subject: price\r\n"
    b"Message-ID: <rfc2231@supplier.ru>\r\n"
    b"MIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="BOUNDARY"\r\n'
    b"\r\n"
    b"--BOUNDARY\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"\r\n"
    b"see attachment\r\n"
    b"--BOUNDARY\r\n"
    b"Content-Type: application/vnd.ms-excel\r\n"
    b"Content-Disposition: attachment; filename*=utf-8''%D0%BF%D1%80%D0%B0%D0%B9%D1%81.xlsx\r\n"
    b"Content-Transfer-Encoding: base64\r\n"
    b"\r\n"
    b"UEsDBBQ=\r\n"
    b"--BOUNDARY--\r\n"
)


def test_rfc2231_encoded_filename_is_decoded():
    (att,) = parse_message(RFC2231_MESSAGE).attachments

    assert att.key == "part2"
    assert att.filename == "прайс.xlsx"
    assert att.content_type == "application/vnd.ms-excel"
    assert att.size == 5


def test_rfc2231_continuation_filename_is_decoded():
    raw = RFC2231_MESSAGE.replace(
        b"filename*=utf-8''%D0%BF%D1%80%D0%B0%D0%B9%D1%81.xlsx",
        b"filename*0*=utf-8''%D0%BF%D1%80; filename*1*=%D0%B0%D0%B9%D1%81.xlsx",
    )

    (att,) = parse_message(raw).attachments

    assert att.filename == "прайс.xlsx"


def test_attachment_in_forwarded_message_rfc822_is_found():
    inner = price_mail([("прайс_июнь.xlsx", b"inner-bytes")], message_id="<inner@supplier.ru>")
    outer = EmailMessage()
    outer["From"] = "manager@buyer.example"
    outer["Subject"] = "Fwd: Прайс-лист"
    outer["Message-ID"] = "<outer@buyer.example>"
    outer.set_content("Пересылаю.")
    outer.add_attachment(inner)
    raw = outer.as_bytes()

    parsed = parse_message(raw)

    assert [a.filename for a in parsed.attachments] == ["прайс_июнь.xlsx"]
    assert parsed.structural_defects == []
    assert attachment_payload(raw, parsed.attachments[0].key) == b"inner-bytes"


def test_message_without_attachments_has_none():
    msg = EmailMessage()
    msg["Subject"] = "hi"
    msg.set_content("text only")

    assert parse_message(msg.as_bytes()).attachments == []


# -- parse_message: defects -------------------------------------------------------------------


def test_clean_message_has_no_structural_defects():
    parsed = parse_message(price_mail([("прайс.xlsx", b"data")]).as_bytes())

    assert parsed.structural_defects == []


def test_multipart_without_boundary_parameter_is_a_structural_defect():
    raw = (
        b"From: a@supplier.ru\r\n"
        b"MIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed\r\n"
        b"\r\n"
        b"--X\r\nContent-Type: text/plain\r\n\r\nhi\r\n--X--\r\n"
    )

    defects = parse_message(raw).structural_defects

    assert any(d.startswith("NoBoundaryInMultipartDefect") for d in defects)


def test_missing_blank_line_after_headers_is_a_structural_defect():
    raw = (
        b"From: a@supplier.ru\r\n"
        b"Subject: price\r\n"
        b"this body line has no colon and follows the headers directly\r\n"
        b"second body line\r\n"
    )

    defects = parse_message(raw).structural_defects

    assert any(d.startswith("MissingHeaderBodySeparatorDefect") for d in defects)


def test_multipart_with_boundary_but_no_parts_is_a_structural_defect():
    raw = (
        b"From: a@supplier.ru\r\n"
        b"MIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="NEVER-USED"\r\n'
        b"\r\n"
        b"just some text, no parts at all\r\n"
    )

    defects = parse_message(raw).structural_defects

    assert any(d.startswith("StartBoundaryNotFoundDefect") for d in defects)


# -- attachment_payload -----------------------------------------------------------------------


def test_attachment_payload_returns_the_decoded_bytes_by_key():
    raw = price_mail([("a.xlsx", b"first"), ("b.xlsx", b"\x00\x01second")]).as_bytes()

    assert attachment_payload(raw, "part2") == b"first"
    assert attachment_payload(raw, "part3") == b"\x00\x01second"


@pytest.mark.parametrize("key", ["part99", "nonsense", ""])
def test_attachment_payload_raises_key_error_for_an_unknown_key(key):
    raw = price_mail([("a.xlsx", b"first")]).as_bytes()

    with pytest.raises(KeyError):
        attachment_payload(raw, key)
