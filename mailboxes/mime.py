"""Reading e-mail bytes: header fields for the record, attachments for matching.

Every value that leaves this module is a clean ``str`` (no NUL, bounded length), since
supplier mail is untrusted input and PostgreSQL text refuses NUL characters.
"""

from __future__ import annotations

import email
import email.errors
import email.header
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser, HeaderParser
from email.utils import getaddresses, parsedate_to_datetime

from pricefeed.matching import Attachment

# Defects that mean the structure of the message cannot be trusted: attachments may be
# missing or cut, so the message is refused with the reason rather than half-read.
STRUCTURAL_DEFECTS = (
    email.errors.NoBoundaryInMultipartDefect,
    email.errors.StartBoundaryNotFoundDefect,
    email.errors.CloseBoundaryNotFoundDefect,
    email.errors.MissingHeaderBodySeparatorDefect,
    email.errors.MultipartInvariantViolationDefect,
    email.errors.FirstHeaderLineIsContinuationDefect,
)


def clean(value: object, limit: int = 998) -> str:
    text = "" if value is None else str(value)
    text = text.replace("\x00", "").replace("\r", " ").replace("\n", " ").strip()
    return text[:limit]


@dataclass(frozen=True)
class HeaderFields:
    message_id: str
    date: str
    sent_at: datetime | None
    from_header: str
    from_address: str
    subject: str


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # a header the parser cannot make sense of: keep the raw text
        value = msg.get_all(name, failobj=[""])[0] if hasattr(msg, "get_all") else ""
    return clean(value)


_ANGLE_ADDR = re.compile(r"<\s*([^<>\s@]+@[^<>\s@]+)\s*>")


def _first_address(from_header: str) -> str:
    """The sender's address: the first ``<angle-addr>`` when there is one, so a display
    name that merely looks like an address (``prices@supplier.ru <x@evil>``) never wins;
    otherwise the first bare address. Python 3.11's ``getaddresses`` lacks the strict
    parsing fix (CVE-2023-27043), hence the explicit rule."""
    match = _ANGLE_ADDR.search(from_header)
    if match:
        return clean(match.group(1).lower(), 320)
    try:
        addresses = getaddresses([from_header])
    except Exception:
        return ""
    for _name, addr in addresses:
        if "@" in addr:
            return clean(addr.lower(), 320)
    return ""


def _header_text(raw_headers: bytes) -> str:
    """The header block as text: UTF-8 (RFC 6532), else cp1251, the usual legacy charset
    of raw 8-bit headers in this trade."""
    try:
        return raw_headers.decode("utf-8")
    except UnicodeDecodeError:
        return raw_headers.decode("cp1251", errors="replace")


def header_fields(raw_headers: bytes) -> HeaderFields:
    """Reads the header fields a record keeps; never raises on malformed headers."""
    msg = HeaderParser(policy=policy.compat32).parsestr(_header_text(raw_headers))
    message_id = clean(msg.get("Message-ID", ""))
    if message_id:
        message_id = f"<{message_id.strip('<> ')}>"
    date = clean(msg.get("Date", ""))
    try:
        sent_at = parsedate_to_datetime(date) if date else None
        if sent_at is not None and sent_at.tzinfo is None:
            sent_at = None
    except (TypeError, ValueError, IndexError, OverflowError):
        sent_at = None
    raw_from = clean(msg.get("From", ""))
    return HeaderFields(
        message_id=message_id,
        date=date,
        sent_at=sent_at,
        from_header=_decoded(raw_from),
        # The address comes from the undecoded header: an encoded display name such as
        # "=?utf-8?q?prices=40supplier.ru?=" must never pass for the sender's address.
        from_address=_first_address(raw_from),
        subject=_decoded(msg.get("Subject", "")),
    )


def _decoded(value: object) -> str:
    """Decodes RFC 2047 encoded words (=?utf-8?b?...?=), tolerating broken ones."""
    if not value:
        return ""
    try:
        text = str(email.header.make_header(email.header.decode_header(str(value))))
    except (LookupError, ValueError, UnicodeError, email.errors.HeaderParseError):
        text = str(value)
    return clean(text)


def split_headers(raw: bytes) -> bytes:
    """Returns the header block of a raw message (everything before the first blank line)."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        idx = raw.find(sep)
        if idx != -1:
            return raw[: idx + len(sep)]
    return raw


@dataclass
class ParsedMessage:
    headers: HeaderFields
    attachments: list[Attachment] = field(default_factory=list)
    structural_defects: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Decoded attachment bytes by attachment key.
    payloads: dict[str, bytes] = field(default_factory=dict, repr=False)


def _defect_text(defect: Exception) -> str:
    return f"{type(defect).__name__}: {defect}" if str(defect) else type(defect).__name__


def parse_message(raw: bytes) -> ParsedMessage:
    """Parses a whole message: header fields, attachments in MIME order, and defects."""
    msg: EmailMessage = BytesParser(policy=policy.default).parsebytes(raw)
    parsed = ParsedMessage(headers=header_fields(split_headers(raw)))
    for index, part in enumerate(msg.walk()):
        for defect in part.defects:
            text = _defect_text(defect)
            if isinstance(defect, STRUCTURAL_DEFECTS):
                parsed.structural_defects.append(text)
            else:
                parsed.warnings.append(text)
        if part.is_multipart():
            continue
        try:
            filename = part.get_filename()
        except Exception as exc:  # undecodable RFC 2231 parameters
            parsed.warnings.append(f"part {index}: unreadable filename ({exc})")
            filename = None
        if not filename:
            continue
        payload = part.get_payload(decode=True) or b""
        parsed.payloads[f"part{index}"] = payload
        parsed.attachments.append(
            Attachment(
                key=f"part{index}",
                filename=clean(filename, 500),
                content_type=clean(part.get_content_type(), 255),
                size=len(payload),
                sha256=hashlib.sha256(payload).hexdigest(),
            )
        )
    return parsed


def attachment_payload(raw: bytes, key: str) -> bytes:
    """Returns the decoded bytes of the attachment ``key`` ("part<N>") of a raw message."""
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    for index, part in enumerate(msg.walk()):
        if f"part{index}" == key:
            return part.get_payload(decode=True) or b""
    raise KeyError(key)
