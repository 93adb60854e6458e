"""MIME budgets: how much structure a message may have before anything decodes it.

The stdlib's ``email`` package is quadratic or worse on some hostile shapes (tens of
thousands of RFC 2047 encoded words in one header, thousands of parameters, thousands of
comments or quoted strings in a field it parses, multiparts nested thousands deep), so a
message is first walked here, in time linear in its size times the allowed depth,
counting what the parser would have to chew on. A message over
any budget is refused with the budget's name; nothing is decoded.

The walk follows the feedparser's rules where they decide what is a header: a header
block runs to the first empty line or the first line that is not a header line, a
multipart body is split at lines that start with "--" + boundary, and a message/* part
holds a message. Where it is unsure it counts more, never less.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings

from core.texts import Text

from . import texts
from .exceptions import MessageRefused


@dataclass(frozen=True)
class MimeBudget:
    """Caps on one message's MIME structure (see docs/configuration.md).

    ``max_parts``          entities in the message, the message itself included;
    ``max_depth``          nesting of multiparts and attached messages;
    ``max_header_bytes``   one entity's header block;
    ``max_header_fields``  header fields of one entity;
    ``max_encoded_words``  RFC 2047 encoded words in one header field;
    ``max_params``         parameters of one header field (Content-Type, -Disposition);
    ``max_comments``       comments and quoted strings of one Content-* field;
    ``max_content_field_bytes``  one Content-Type or Content-Disposition field, unfolded;
    ``max_content_bytes``  all the Content-Type and Content-Disposition fields of the
                           message together;
    ``max_cpu_seconds``    CPU time to read the message and list its files.
    """

    max_parts: int = 500
    max_depth: int = 20
    max_header_bytes: int = 256 * 1024
    max_header_fields: int = 500
    max_encoded_words: int = 100
    max_params: int = 100
    max_comments: int = 100
    max_content_field_bytes: int = 4096
    max_content_bytes: int = 256 * 1024
    max_cpu_seconds: float = 10.0


def mime_budget() -> MimeBudget:
    """The budget from the ``PRICEFEED_MIME_*`` settings, read at call time."""
    return MimeBudget(
        max_parts=settings.PRICEFEED_MIME_MAX_PARTS,
        max_depth=settings.PRICEFEED_MIME_MAX_DEPTH,
        max_header_bytes=settings.PRICEFEED_MIME_MAX_HEADER_BYTES,
        max_header_fields=settings.PRICEFEED_MIME_MAX_HEADER_FIELDS,
        max_encoded_words=settings.PRICEFEED_MIME_MAX_ENCODED_WORDS,
        max_params=settings.PRICEFEED_MIME_MAX_PARAMS,
        max_comments=settings.PRICEFEED_MIME_MAX_COMMENTS,
        max_content_field_bytes=settings.PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES,
        max_content_bytes=settings.PRICEFEED_MIME_MAX_CONTENT_BYTES,
        max_cpu_seconds=settings.PRICEFEED_MIME_MAX_CPU_SECONDS,
    )


_EOL = re.compile(rb"\r\n|\r|\n")
# The feedparser's headerRE: what it takes for a header line (a field, a continuation,
# or a "From " envelope line).
_HEADER_LINE = re.compile(rb"From |[\041-\071\073-\176]*:|[ \t]")
_FIELD_NAME = re.compile(rb"([\041-\071\073-\176]*):")
_BOUNDARY = re.compile(rb"""boundary\*?\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))""", re.I)
_CONTENT_TYPE = re.compile(rb"\s*([!#-'*+.0-9A-Z^-~-]+)\s*/\s*([!#-'*+.0-9A-Z^-~-]+)", re.I)
# The start of an RFC 2047 encoded word: =?charset?B? or =?charset*lang?Q?
_ENCODED_WORD = re.compile(rb"=\?[^?\s]*\?[bBqQ]\?")
# Fields the email parser itself parses as structured (content type, disposition,
# transfer encoding): its parsing is quadratic in the comments and quoted strings of one
# field (gh-136063: 4,000 "(a)" in a Content-Type took 1.1 s, 30,000 a minute), and
# linear in the rest, but up to ~17 µs a byte for a field of many short tokens ("a a a"):
# 500 parts with 4 KiB fields so took 47 s, hence the cap on the message's total too
# (the worst shape found within every cap, 32 such parts, takes 3.4 s).
# Other fields are read from the raw bytes, never by the email parser.
_PARSED_FIELD = b"content-"
_LENGTH_CAPPED = (b"content-type", b"content-disposition")


@dataclass
class _Entity:
    content_type: bytes = b"text/plain"
    boundary: bytes = b""
    body: int = 0
    # Bytes of its Content-Type and Content-Disposition fields.
    content_bytes: int = 0


def check_structure(raw: bytes, budget: MimeBudget) -> int:
    """Walks the message's MIME tree under ``budget``; returns the number of entities.

    Raises MessageRefused naming the budget (and its setting) that was overrun."""
    parts = 0
    content_bytes = 0
    stack = [(0, len(raw), 0, b"text/plain")]
    while stack:
        start, end, depth, default_type = stack.pop()
        parts += 1
        if parts > budget.max_parts:
            raise MessageRefused(Text(texts.TOO_MANY_PARTS, limit=budget.max_parts))
        if depth > budget.max_depth:
            raise MessageRefused(Text(texts.TOO_DEEP, limit=budget.max_depth))
        entity = _read_headers(raw, start, end, default_type, budget)
        content_bytes += entity.content_bytes
        if content_bytes > budget.max_content_bytes:
            raise MessageRefused(
                Text(texts.CONTENT_FIELDS_TOO_LONG, limit=budget.max_content_bytes)
            )
        if entity.content_type.startswith(b"multipart/"):
            # The parts of a digest are messages unless they say otherwise.
            inner = b"message/rfc822" if entity.content_type == b"multipart/digest" else b""
            for part_start, part_end in reversed(
                _body_parts(raw, entity.body, end, entity.boundary) if entity.boundary else []
            ):
                stack.append((part_start, part_end, depth + 1, inner or b"text/plain"))
        elif entity.content_type.startswith(b"message/") and entity.body < end:
            stack.append((entity.body, end, depth + 1, b"text/plain"))
    return parts


def _read_headers(
    raw: bytes, start: int, end: int, default_type: bytes, budget: MimeBudget
) -> _Entity:
    """Counts an entity's header block (under the budget) and reads what the walk needs
    from it: its content type and boundary, and where its body starts."""
    entity = _Entity(content_type=default_type, body=end)
    fields = 0
    field: list[bytes] = []
    pos = start
    while pos < end:
        if pos - start > budget.max_header_bytes:
            raise MessageRefused(Text(texts.HEADER_TOO_LARGE, limit=budget.max_header_bytes))
        m = _EOL.search(raw, pos, end)
        line_end, next_pos = (m.start(), m.end()) if m else (end, end)
        if line_end == pos or not _HEADER_LINE.match(raw, pos, line_end):
            entity.body = next_pos if line_end == pos else pos
            break
        line = raw[pos:line_end]
        if line[:1] in (b" ", b"\t"):
            field.append(line)
        else:
            _field_done(field, entity, budget)
            fields += 1
            if fields > budget.max_header_fields:
                raise MessageRefused(Text(texts.TOO_MANY_FIELDS, limit=budget.max_header_fields))
            field = [line]
        pos = next_pos
    _field_done(field, entity, budget)
    return entity


def _field_done(lines: list[bytes], entity: _Entity, budget: MimeBudget) -> None:
    if not lines:
        return
    value = b"".join(lines)
    name_match = _FIELD_NAME.match(value)
    name = name_match.group(1).strip().lower() if name_match else b""
    if sum(1 for _ in _ENCODED_WORD.finditer(value)) > budget.max_encoded_words:
        raise MessageRefused(
            Text(
                texts.TOO_MANY_ENCODED_WORDS,
                header=_name_text(name),
                limit=budget.max_encoded_words,
            )
        )
    if value.count(b";") > budget.max_params:
        raise MessageRefused(
            Text(texts.TOO_MANY_PARAMS, header=_name_text(name), limit=budget.max_params)
        )
    if name.startswith(_PARSED_FIELD):
        _check_parsed_field(name, value, budget)
    if name in _LENGTH_CAPPED:
        entity.content_bytes += len(value)
    if name == b"content-type" and name_match is not None:
        rest = value[name_match.end() :]
        kind = _CONTENT_TYPE.match(rest)
        if kind:
            entity.content_type = kind.group(1).lower() + b"/" + kind.group(2).lower()
        boundary = _BOUNDARY.search(rest)
        if boundary:
            quoted, bare = boundary.groups()
            entity.boundary = (quoted if quoted is not None else bare).strip()


def _check_parsed_field(name: bytes, value: bytes, budget: MimeBudget) -> None:
    """Caps what makes the email parser slow on a field it parses: its length (Content-Type
    and Content-Disposition; real ones, a long Cyrillic file name in RFC 2231 form
    included, stay under 2 KiB) and its comments and quoted strings, counted as every
    "(" and every second '"' (so a parenthesis inside a quoted file name counts too:
    more, never less)."""
    if value.count(b"(") + (value.count(b'"') + 1) // 2 > budget.max_comments:
        raise MessageRefused(
            Text(texts.TOO_MANY_COMMENTS, header=_name_text(name), limit=budget.max_comments)
        )
    if name in _LENGTH_CAPPED and len(value) > budget.max_content_field_bytes:
        raise MessageRefused(
            Text(
                texts.FIELD_TOO_LONG,
                header=_name_text(name),
                limit=budget.max_content_field_bytes,
            )
        )


def _name_text(name: bytes) -> str:
    return name.decode("ascii", "replace")[:60] or "(unnamed)"


def _body_parts(raw: bytes, start: int, end: int, boundary: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the parts of a multipart body: between lines that start with
    "--" + boundary; the part after the last delimiter runs to the end when the
    closing delimiter is missing (the parser reads it so, with a defect)."""
    delimiter = b"--" + boundary
    ranges: list[tuple[int, int]] = []
    part_start: int | None = None
    pos = start
    while pos < end:
        at = raw.find(delimiter, pos, end)
        if at < 0:
            break
        pos = at + len(delimiter)
        if at != start and raw[at - 1] not in b"\r\n":
            continue  # not at the start of a line
        if part_start is not None:
            ranges.append((part_start, at))
        closing = raw.startswith(b"--", pos)
        m = _EOL.search(raw, pos, end)
        part_start = m.end() if m else end
        if closing:
            return ranges
        pos = part_start
    if part_start is not None:
        ranges.append((part_start, end))
    return ranges
