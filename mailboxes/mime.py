"""Reading e-mail bytes: header fields for the record, attachments for matching.

Every value that leaves this module is a clean ``str`` (no NUL, bounded length), since
supplier mail is untrusted input and PostgreSQL text refuses NUL characters.
"""

from __future__ import annotations

import binascii
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
from email.utils import parsedate_to_datetime

from core.texts import Text

from . import sender, texts
from .exceptions import MessageRefused
from .mimebudget import MimeBudget, check_structure, mime_budget

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
    """A value PostgreSQL stores as text or inside JSON: one line, no NUL, no lone
    surrogate (what undecodable bytes become), at most ``limit`` characters."""
    text = "" if value is None else str(value)
    text = text.replace("\x00", "").replace("\r", " ").replace("\n", " ").strip()
    return text[:limit].encode("utf-8", "replace").decode("utf-8")


@dataclass(frozen=True)
class HeaderFields:
    message_id: str
    date: str
    sent_at: datetime | None
    from_header: str
    from_address: str
    subject: str
    # An address other than the sender's that the From field's display name or a
    # comment holds ("" when none does): recording flags it on the message.
    from_shown: str = ""


# What recording reads of a header field before decoding it: far more than the 998
# characters kept, far less than what makes RFC 2047 decoding slow (it is quadratic in
# the number of encoded words).
FIELD_READ_LIMIT = 4096
# Fields are looked for in this much of a header block (header blocks of real mail are
# a few KiB; a hostile one may be megabytes, which the MIME budget refuses later).
HEADER_SCAN_LIMIT = 1024 * 1024
_RECORDED_FIELDS = (b"message-id", b"date", b"from", b"subject")
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n|$)")


def _field_text(value: bytes) -> str:
    """A raw field value as text: UTF-8 (RFC 6532), else cp1251, the usual legacy
    charset of raw 8-bit headers in this trade."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("cp1251", errors="replace")


def recorded_fields(raw_headers: bytes, limit: int = FIELD_READ_LIMIT) -> dict[bytes, bytes]:
    """The first Message-ID, Date, From and Subject fields of a header block, unfolded
    and cut to ``limit`` bytes each (a cut one without its last, partial word)."""
    return {key: _uncut(value, limit) for key, value in _fields_read(raw_headers, limit).items()}


def _fields_read(raw_headers: bytes, limit: int) -> dict[bytes, bytes]:
    """The recorded fields, unfolded, their first ``limit`` bytes each (a field as long
    as ``limit`` may have been cut), in one pass that never holds more than that."""
    found: dict[bytes, bytearray] = {}
    current: bytearray | None = None
    for m in _LINE.finditer(memoryview(raw_headers)[:HEADER_SCAN_LIMIT]):
        line = m.group().rstrip(b"\r\n")
        if not line:
            break
        if line[:1] in (b" ", b"\t"):
            if current is not None and len(current) < limit:
                current += line[: limit - len(current)]
            continue
        name, colon, value = line.partition(b":")
        key = name.strip().lower()
        current = None
        if colon and key in _RECORDED_FIELDS and key not in found:
            current = found[key] = bytearray(value[:limit])
    return {key: bytes(value) for key, value in found.items()}


def _uncut(value: bytes, limit: int) -> bytes:
    """A field cut at ``limit`` loses its last, partial word (an encoded word cut in
    half would otherwise show as raw =?utf-8?b?... text)."""
    if len(value) < limit:
        return value
    head, space, _tail = value.rpartition(b" ")
    return head if space else value


def header_fields(raw_headers: bytes) -> HeaderFields:
    """Reads the header fields a record keeps, in bounded time whatever the header
    block holds; never raises on malformed headers."""
    read = _fields_read(raw_headers, FIELD_READ_LIMIT)
    raw = {key: _uncut(value, FIELD_READ_LIMIT) for key, value in read.items()}

    def text(name: bytes) -> str:
        return clean(_field_text(raw.get(name, b"")))

    message_id = text(b"message-id")
    if message_id:
        message_id = f"<{message_id.strip('<> ')[:996]}>"  # 998 with the brackets
    date = text(b"date")
    try:
        sent_at = parsedate_to_datetime(date) if date else None
        if sent_at is not None and sent_at.tzinfo is None:
            sent_at = None
    except (TypeError, ValueError, IndexError, OverflowError):
        sent_at = None
    raw_from = text(b"from")
    from_sender = _from_sender(read.get(b"from", b""))
    return HeaderFields(
        message_id=message_id,
        date=date,
        sent_at=sent_at,
        from_header=_decoded(raw_from),
        from_address=clean(from_sender.address, 320),
        subject=_decoded(_field_text(raw.get(b"subject", b"")).strip()),
        from_shown=clean(from_sender.shown, 320),
    )


def _from_sender(value: bytes) -> sender.Sender:
    """The sender of the From field as read, parsed whole (not the 998 characters
    ``from_header`` keeps: "x@y", spaces, then "<z@w>" cut before the angle-addr would
    give x@y). The address comes from the undecoded field, as RFC 5322 reads it: neither
    a comment nor a display name (encoded or not, such as
    "=?utf-8?q?prices=40supplier.ru?=") ever passes for it. A From as long as the read
    limit may have lost its address to the cut: it gives none."""
    if len(value) >= FIELD_READ_LIMIT:
        return sender.Sender(address="")
    return sender.sender(clean(_field_text(value), FIELD_READ_LIMIT), decode=_decoded)


def _decoded(value: object) -> str:
    """Decodes RFC 2047 encoded words (=?utf-8?b?...?=), tolerating broken ones."""
    if not value:
        return ""
    try:
        text = str(email.header.make_header(email.header.decode_header(str(value))))
    except (LookupError, ValueError, UnicodeError, email.errors.MessageError):
        text = str(value)
    return clean(text)


def split_headers(raw: bytes) -> bytes:
    """Returns the header block of a raw message (everything before the first blank
    line) as bytes, also when ``raw`` is another bytes-like value."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        idx = raw.find(sep)
        if idx != -1:
            return bytes(raw[: idx + len(sep)])
    return bytes(raw)


@dataclass(frozen=True)
class AttachmentPart:
    """A MIME part with a file name: where it is (``part<N>`` in walk order) and what."""

    key: str
    filename: str
    content_type: str
    size: int
    sha256: str


@dataclass
class ParsedMessage:
    headers: HeaderFields
    attachments: list[AttachmentPart] = field(default_factory=list)
    structural_defects: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Decoded attachment bytes by attachment key.
    payloads: dict[str, bytes] = field(default_factory=dict, repr=False)


# Defects and warnings kept per message (each at most 300 characters): a hostile
# message may have a defect in each of hundreds of parts.
MAX_NOTES = 100


def _capped(notes: list[str]) -> list[str]:
    if len(notes) <= MAX_NOTES:
        return notes
    return [*notes[:MAX_NOTES], Text(texts.MORE_NOTES, count=len(notes) - MAX_NOTES)]


def _defect_text(defect: Exception) -> str:
    text = f"{type(defect).__name__}: {defect}" if str(defect) else type(defect).__name__
    return clean(text, 300)


def parse_message(raw: bytes, budget: MimeBudget | None = None) -> ParsedMessage:
    """Parses a whole message: header fields, attachments in MIME order, and defects.

    Raises MessageRefused when the message is over the MIME ``budget`` (checked before
    anything is decoded) or too deep for the parser."""
    msg = _parsed(raw, budget or mime_budget())
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
            parsed.warnings.append(
                Text(texts.UNREADABLE_FILENAME, part=index, error=clean(exc, 300))
            )
            filename = None
        if not filename:
            continue
        payload = _decoded_payload(part)
        parsed.payloads[f"part{index}"] = payload
        parsed.attachments.append(
            AttachmentPart(
                key=f"part{index}",
                filename=clean(filename, 500),
                content_type=clean(part.get_content_type(), 255),
                size=len(payload),
                sha256=hashlib.sha256(payload).hexdigest(),
            )
        )
    parsed.structural_defects = _capped(parsed.structural_defects)
    parsed.warnings = _capped(parsed.warnings)
    return parsed


def attachment_payload(raw: bytes, key: str, *, quick: bool = True) -> bytes:
    """Returns the decoded bytes of the attachment ``key`` ("part<N>") of a raw message.

    A base64 part of a well-formed message is found by byte offsets and decoded in one
    call (~0.3 s for a 100 MB message, where the line-based ``email`` parser took ~4 s).
    Anything the quick reader is not sure about (message/* parts, other transfer
    encodings, a missing boundary, header lines it does not recognise, base64 that needs
    its padding repaired), or ``quick=False``, is read by the ``email`` parser, which
    defines the part numbering, under the MIME budget (MessageRefused when over it).
    """
    fast = _fast_payload(raw, key) if quick else None
    if fast is not None:
        return fast
    msg = _parsed(raw, mime_budget())
    for index, part in enumerate(msg.walk()):
        if f"part{index}" == key:
            return _decoded_payload(part)
    raise KeyError(key)


# What the email parser raises on some malformed fields instead of noting a defect: a
# parameter name ending in "*" with no value ("Content-Type: text/csv; name*") raises
# IndexError on every Python here (3.11 to 3.13), found by tests/fuzz/test_mime.py.
PARSER_BUGS = (LookupError, ValueError, TypeError, AttributeError)


def _parsed(raw: bytes, budget: MimeBudget) -> EmailMessage:
    """The ``email`` parser's reading of a message that fits ``budget``."""
    check_structure(raw, budget)
    try:
        msg: EmailMessage = BytesParser(policy=policy.default).parsebytes(raw)
        for part in msg.walk():  # walk() recurses: depth trouble shows here, not later
            part.get_content_type()
    except RecursionError:
        raise MessageRefused(texts.NESTED_TOO_DEEP) from None
    except PARSER_BUGS as exc:
        # The same bytes fail the same way every time: refused, never retried.
        raise MessageRefused(Text(texts.UNREADABLE_MESSAGE, error=_defect_text(exc))) from None
    return msg


def _decoded_payload(part: Message) -> bytes:
    """A leaf part's body with its transfer encoding undone (b"" when it has none)."""
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


# -- the quick attachment reader ------------------------------------------------------
# It follows the rules of the stdlib's feedparser for well-formed messages: a header
# block ends at the first empty line; a multipart body is split at lines that are
# "--" + boundary (optionally "--" for the last one) followed only by spaces or tabs;
# the line break before a delimiter belongs to the delimiter; parts are numbered in
# walk() order (depth first, the message itself is part 0).

_EOL = re.compile(rb"\r\n|\r(?!\n)|\n")
# Stricter than the feedparser's headerRE (no "From " line, no empty field name): a line
# it would read differently is left to it.
_HEADER_LINE = re.compile(rb"[\x21-\x39\x3b-\x7e]+:|[ \t]")


class _NotSure(Exception):
    """The quick reader leaves this message to the email parser."""


def _fast_payload(raw: bytes, key: str) -> bytes | None:
    if not key.startswith("part") or not key[4:].isdigit():
        return None
    try:
        found = _find_part(raw, 0, len(raw), int(key[4:]), [0])
    except (_NotSure, ValueError, LookupError, email.errors.MessageError):
        return None
    if found is None:
        return None
    headers, start, end = found
    if headers.get("content-transfer-encoding", "").strip().lower() != "base64":
        return None
    # Like the email parser's decoding: line breaks and other characters outside the
    # alphabet are skipped. Where it would repair missing padding, a2b raises: its turn.
    try:
        return binascii.a2b_base64(memoryview(raw)[start:end])
    except binascii.Error:
        return None


def _header_end(raw: bytes, start: int, end: int) -> int:
    """Offset of the body of the entity raw[start:end]: just past its first empty line."""
    pos = start
    while pos < end:
        m = _EOL.search(raw, pos, end)
        line_end = m.start() if m else end
        if line_end == pos:  # the empty line
            return m.end() if m else end
        if not _HEADER_LINE.match(raw, pos, line_end):
            raise _NotSure("not a header line")
        if m is None:
            return end
        pos = m.end()
    return end


def _find_part(
    raw: bytes, start: int, end: int, wanted: int, counter: list[int]
) -> tuple[Message, int, int] | None:
    """(headers, body start, body end) of part ``wanted`` inside raw[start:end], an entity
    numbered counter[0]; None when the part is not inside it."""
    body = _header_end(raw, start, end)
    headers = HeaderParser(policy=policy.default).parsestr(
        raw[start:body].decode("ascii", "surrogateescape")
    )
    index = counter[0]
    counter[0] += 1
    maintype = headers.get_content_maintype()
    if maintype == "message":
        raise _NotSure("message/* parts hold parsed messages")
    if maintype != "multipart":
        return (headers, body, end) if index == wanted else None
    if index == wanted:
        raise _NotSure("a multipart is not an attachment")
    boundary = headers.get_boundary()
    if not boundary:
        raise _NotSure("multipart without boundary")
    if headers.get_content_subtype() == "digest":
        raise _NotSure("parts of a digest are messages by default")
    for part_start, part_end in _parts(raw, body, end, boundary.encode("ascii")):
        found = _find_part(raw, part_start, part_end, wanted, counter)
        if found is not None or counter[0] > wanted:
            return found
    return None


def _parts(raw: bytes, start: int, end: int, boundary: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the body parts of a multipart body raw[start:end]."""
    delimiter = b"--" + boundary
    ranges: list[tuple[int, int]] = []
    part_start = None
    pos = start
    while True:
        at = raw.find(delimiter, pos, end)
        if at < 0:
            raise _NotSure("no closing delimiter")
        pos = at + len(delimiter)
        if at != start and raw[at - 1] not in b"\r\n":
            continue  # not at the start of a line: content
        after = pos
        closing = raw.startswith(b"--", after)
        if closing:
            after += 2
        while after < end and raw[after] in b" \t":
            after += 1
        m = _EOL.match(raw, after, end)
        if m is None and after != end:
            continue  # "--boundary" followed by more text: content
        if part_start is not None and at == part_start:
            raise _NotSure("two delimiter lines in a row")
        line_start = at
        if at != start:  # the line break before the delimiter is part of it
            line_start -= 2 if raw[at - 2 : at] == b"\r\n" else 1
        if part_start is not None:
            ranges.append((part_start, max(part_start, line_start)))
        if closing:
            return ranges
        part_start = m.end() if m else end
        pos = part_start
