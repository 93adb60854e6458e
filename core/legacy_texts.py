"""Reads a reason stored as English before texts were stored as a msgid and its values.

Used only by the data migrations that converted the rows written before (mailboxes 0008,
pricefeed 0012, outbox 0007, notifications 0009); nothing else imports it, and it goes
with them when they are squashed. The templates are frozen here as they stood: a stored
English string is read as the template it was made from (the one whose fixed words
account for most of it, its values read the same way in turn) and becomes the stored
form of ``core.storedtext.Text``. A string of no template becomes a foreign text. Values
are cut as a Text cuts them, and a string longer than ``LONGEST`` is not read at all:
what a hostile cell made long stays bounded here too.
"""

# ruff: noqa: E501 (the frozen templates are kept one to a line, as they were written)

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .storedtext import CUT, FOREIGN, cut

LONGEST = 1000
# A value longer than this is not read as a text of its own (a list of file names).
_NESTED_MAX = 500
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")

# Names whose values were identifiers, never numbers in the locale's format.
VERBATIM = frozenset(
    (
        "checkpoint",
        "code",
        "first",
        "mailbox",
        "name",
        "new",
        "old",
        "path",
        "server",
        "sheet",
        "uid",
        "worker",
    )
)

TEMPLATES = (
    "%(count)s MiB",
    "%(count)s bytes",
    "%(error)s (unread: %(unread)s)",
    "%(error)s: %(detail)s (a permanent error, not retried)",
    "%(failed)s of %(total)s rows failed, over the limit of %(limit)s%%",
    "%(field)s (e.g. %(examples)s)",
    "%(field)s is read from the column headed %(text)s (column %(column)s), not from column %(text)s",
    "%(field)s, setting %(setting)s",
    "%(label)s inflates more than %(ratio)sx its compressed size (%(compressed)s bytes): a zip bomb?",
    "%(label)s inflates to more than %(limit)s",
    "%(label)s: damaged archive entry (%(error)s)",
    "%(label)s: damaged gzip data (%(error)s)",
    "%(label)s: encrypted (password-protected) archive",
    "%(label)s: gzip data is truncated",
    "%(label)s: the attachment inflates to more than %(limit)s in all",
    "%(label)s: unsupported compression (%(error)s)",
    "%(problem)s (above the data)",
    "%(reason)s; last: %(detail)s",
    "%(rows)s row(s) have cells past column %(width)s (%(setting)s); those cells were not read (first: row %(first)s)",
    "%(unread)s; and then: %(error)s",
    "%(where)s is %(size)s bytes, more than %(limit)s",
    "%(where)s: 1 file, more than the %(limit)s taken",
    "%(where)s: a GNU long-name tar header of %(size)s bytes, more than %(limit)s: refused",
    "%(where)s: a GNU sparse file (pax header)",
    "%(where)s: a pax extended tar header has a malformed record at byte %(offset)s: refused",
    "%(where)s: a pax extended tar header has bytes after its records: refused",
    "%(where)s: a pax extended tar header holds a run of more than %(limit)s digits (the CVE-2024-6232 shape): refused",
    "%(where)s: a pax extended tar header of %(size)s bytes, more than %(limit)s KiB (the CVE-2024-6232 shape): refused",
    "%(where)s: a tar header at byte %(offset)s has no readable size",
    "%(where)s: at least %(files)s files, more than the %(limit)s taken from one message",
    "%(where)s: damaged tar archive (%(error)s)",
    "%(where)s: damaged zip archive (%(error)s)",
    "%(where)s: entry %(name)s climbs out of the archive ('..')",
    "%(where)s: entry %(name)s has an absolute path",
    "%(where)s: entry %(name)s has an empty name",
    "%(where)s: entry %(name)s has control characters in its name",
    "%(where)s: entry %(name)s has no local header",
    "%(where)s: entry %(name)s is a link",
    "%(where)s: entry %(name)s is a sparse file",
    "%(where)s: entry %(name)s is a special file",
    "%(where)s: entry %(name)s is a special file (device, pipe or socket)",
    "%(where)s: entry %(name)s is a symbolic link",
    "%(where)s: entry %(name)s names a drive",
    "%(where)s: entry %(name)s overlaps another entry's data (overlapping-entry zip bomb)",
    "%(where)s: entry data overlaps the central directory",
    "%(where)s: more than %(limit)s archive entries in all",
    "... and %(count)s more",
    "Excel 2003 XML spreadsheet",
    "MIME parts nested more than %(limit)s deep (PRICEFEED_MIME_MAX_DEPTH)",
    "MIME parts nested too deep for the parser",
    "MemoryError: out of memory while running it (over the worker's memory limit, PRICEFEED_WORKER_MEMORY_LIMIT); a permanent error, not retried",
    "Message-ID %(message_id)s was already recorded (message %(first)s) with different content; this copy is kept for inspection and not processed",
    "SMTP error: %(reply)s",
    "UIDVALIDITY changed from %(old)s to %(new)s",
    "a header block has more than %(limit)s fields (PRICEFEED_MIME_MAX_HEADER_FIELDS)",
    "a header block is over %(limit)s bytes (PRICEFEED_MIME_MAX_HEADER_BYTES)",
    "after the workbook was opened",
    "archive '%(path)s'",
    "archive '%(path)s' is nested more than %(limit)s levels deep",
    "archive 'attachment'",
    "at row %(row)s",
    "attachment",
    "checkpoint has UIDVALIDITY %(checkpoint)s, server %(server)s",
    "claim by %(worker)s expired (worker died or timed out)",
    "column %(column)s for %(field)s is past the last column of the table (%(last)s)",
    "config has an invalid pattern: %(error)s",
    "could not connect to the SMTP server (%(code)s %(reply)s)",
    "could not record message: %(error)s",
    "crash %(crashes)s of at most %(limit)s: %(detail)s",
    "currency %(value)s is longer than %(limit)s characters",
    "currency contains a NUL character",
    "damaged workbook: %(error)s",
    "damaged workbook: %(what)s loops (mini sector %(sector)s)",
    "damaged workbook: %(what)s loops (sector %(sector)s twice)",
    "damaged workbook: %(what)s names mini sector %(sector)s, past the mini stream",
    "damaged workbook: %(what)s names sector %(sector)s, past the end of the file",
    "damaged workbook: %(what)s runs past the FAT",
    "damaged workbook: FAT sector %(sector)s is past the end of the file",
    "damaged workbook: a directory entry is cut short",
    "damaged workbook: empty root directory",
    "damaged workbook: mini sector shift is not 6",
    "damaged workbook: not a compound file (no OLE2 header)",
    "damaged workbook: sector shift %(shift)s (expected 9 or 12)",
    "damaged workbook: sheet '%(sheet)s' starts past the end of the workbook",
    "damaged workbook: the compound file claims %(claimed)s bytes for %(what)s, more than the file's %(size)s",
    "damaged workbook: truncated compound-file header",
    "encrypted (password-protected) workbook",
    "entry '%(path)s'",
    "entry '%(path)s' is larger than %(limit)s",
    "failed after %(attempts)s attempts, the last one ending with its worker",
    "field larger than field limit (%(limit)s)",
    "file %(path)s is no longer in the archive",
    "file is %(size)s bytes, more than %(limit)s",
    "given up by %(user)s",
    "gzip '%(path)s'",
    "header %(header)s has more than %(limit)s parameters (PRICEFEED_MIME_MAX_PARAMS)",
    "header %(header)s holds more than %(limit)s encoded words (PRICEFEED_MIME_MAX_ENCODED_WORDS)",
    "html (a web page, perhaps saved with a spreadsheet's name)",
    "image",
    "in the header search (merged cells)",
    "in the header search, row %(row)s",
    "invalid regular expression: %(error)s",
    "its DIFAT chain",
    "its FAT",
    "its directory",
    "its mini FAT",
    "its mini stream",
    "lease on mailbox %(mailbox)s not renewed in time",
    "lease on mailbox %(mailbox)s not renewed in time; the step under way failed: %(error)s",
    "line %(line)s is %(size)s bytes long, more than %(limit)s (%(setting)s): not read",
    "line %(line)s is not valid UTF-8",
    "line %(line)s: a record longer than %(limit)s characters (%(setting)s): not read",
    "malformed MIME: %(defects)s",
    "malformed text table at line %(line)s: %(error)s",
    "marked failed by %(user)s",
    "matched %(count)s file(s)",
    "message has no attachments",
    "message is %(size)s bytes, over the limit of %(limit)s bytes (PRICEFEED_MAX_MESSAGE_BYTES); body not stored",
    "missing columns: %(missing)s. Header row %(row)s has: %(cells)s",
    "more than %(limit)s MIME parts (PRICEFEED_MIME_MAX_PARTS)",
    "more than %(limit)s data rows",
    "name contains a NUL character",
    "no Message-ID header",
    "no Message-ID header: duplicates are recognised by content hash",
    "no attachment name matches %(pattern)s (attachments: %(attachments)s)",
    "no detail",
    "no handler for %(kind)s",
    "no header row in the first %(rows)s rows has %(wanted)s",
    "no header row in the first %(rows)s rows: expected one naming the article (e.g. Артикул, Код, SKU) or the name (Наименование, Name) and the price (Цена, Price)",
    "no valid price rows",
    "no valid price rows (%(failed)s row(s) failed)",
    "none",
    "ods (save it as xlsx)",
    "part %(part)s: unreadable filename (%(error)s)",
    "price %(value)s is not a number",
    "price %(value)s is out of range (at most %(digits)s digits before the decimal point)",
    "price %(value)s is zero or below (the config does not allow such prices)",
    "price is missing",
    "reading the file took more than %(seconds)s s (%(setting)s); stopped %(where)s",
    "reading the message ran out of memory (PRICEFEED_WORKER_MEMORY_LIMIT)",
    "reading the message took more than %(seconds)s s of CPU time (PRICEFEED_MIME_MAX_CPU_SECONDS)",
    "refused: %(reason)s",
    "sender %(sender)s does not match %(pattern)s",
    "sender authenticated: %(why)s",
    "sender not authenticated (recorded only): %(why)s",
    "sender not authenticated: %(why)s",
    "sheet %(number)s",
    "sheet '%(sheet)s' not found; the workbook has: %(sheets)s",
    "sku contains a NUL character",
    "sku is longer than %(limit)s characters (%(length)s)",
    "sku is missing",
    "stopped by %(signal)s",
    "stream '%(name)s'",
    "subject %(subject)s does not match %(pattern)s",
    "the SMTP server answered %(code)s %(reply)s",
    "the SMTP server closed the connection (%(reply)s)",
    "the SMTP server refused the login (%(code)s %(reply)s)",
    "the SMTP server refused the message (%(code)s %(reply)s)",
    "the SMTP server refused the recipient %(recipient)s (%(code)s %(reply)s)",
    "the SMTP server refused the sender %(sender)s (%(code)s %(reply)s)",
    "the archive can be opened now (limits changed?): reprocess the message to import the files inside it",
    "the file holds no rows",
    "the file is %(size)s bytes, over the %(limit)s-byte limit (%(setting)s)",
    "the file is empty",
    "the mailbox has no enabled configs",
    "the message holds more than %(limit)s files, attachments and archive members together (PRICEFEED_MAX_FILES_PER_MESSAGE)",
    "the message's raw bytes are not stored",
    "the message's sender was not checked",
    "the workbook has no non-empty sheet",
    "the worker process %(worker)s died while running it",
    "the worker process died while running it %(count)s times (a reader crashed or memory ran out)",
    "the worker process died while running it once (a reader crashed or memory ran out)",
    "uid %(uid)s",
    "unsupported archive: %(format)s (%(where)s)",
    "unsupported format: %(format)s",
    "unsupported format: %(format)s archive (expand it first)",
    "workbook",
    "workbook part '%(name)s'",
    "workbook part '%(name)s' claims %(claimed)s shared strings but holds at most %(most)s: refused (it would exhaust memory)",
    "workbook part '%(name)s' declares a DTD or entities (<!DOCTYPE>/<!ENTITY>): refused as a possible XML bomb or external-entity (XXE) attack",
    "workbook part '%(name)s' has an XML prolog longer than %(limit)s: refused",
    "workbook part '%(name)s' places cells across %(rows)s rows x %(columns)s columns, more than %(limit)s cells: refused (it would exhaust memory)",
    "workbook sheet '%(sheet)s' claims a used range (DIMENSIONS) of %(rows)s rows x %(columns)s columns, more than %(limit)s cells (%(setting)s): refused (the reader would reserve memory for all of it)",
    "workbook sheet '%(sheet)s' places cells across %(rows)s rows x %(columns)s columns, more than %(limit)s cells (%(setting)s): refused (it would exhaust memory)",
    "workbook sheet '%(sheet)s': the formula at row %(row)s, column %(column)s asks for %(spaces)s spaces, more than %(limit)s: refused (the reader would take minutes to render it)",
    "workbook: its shared-string table claims %(claimed)s strings but holds at most %(most)s: refused (it would exhaust memory)",
    "workbook: its sheets share records (sheet '%(sheet)s' is read from where another one is): refused (the reader would read them once per sheet)",
    "workbook: reading it holds %(cells)s cells (every sheet's span, its formulas' span and a copy of the sheet read), more than %(limit)s cells (%(setting)s): refused (it would exhaust memory)",
    "workbook: the compound-file header makes the reader reserve a DIFAT of %(claimed)s entries, more than %(limit)s: refused (it would abort)",
    "xlsb (binary workbook; save it as xlsx)",
)


def _compiled(template: str) -> tuple[str, str, re.Pattern[str], int]:
    """The fixed words before the first value and after the last, the regex, and how
    many fixed characters."""
    parts, position, seen = [], 0, set()
    for found in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position : found.start()]))
        name = found[1]
        if not name:
            parts.append("%")
        elif name in seen:
            parts.append(f"(?P={name})")
        else:
            parts.append(f"(?P<{name}>.*?)")
            seen.add(name)
        position = found.end()
    parts.append(re.escape(template[position:]))
    names = list(_PLACEHOLDER.finditer(template))
    prefix = template[: names[0].start()] if names else template
    suffix = template[names[-1].end() :] if names else template
    return (
        prefix.replace("%%", "%"),
        suffix.replace("%%", "%"),
        re.compile("".join(parts), re.DOTALL),
        len(_PLACEHOLDER.sub("", template)),
    )


# The surer templates (more fixed characters) first; a template of no fixed words would
# read every text, so it is never one.
_PATTERNS = sorted(
    ((template, *_compiled(template)) for template in TEMPLATES),
    key=lambda pattern: -pattern[4],
)
_PATTERNS = [pattern for pattern in _PATTERNS if pattern[4]]


@lru_cache(maxsize=4096)
def _read(text: str) -> tuple[int, str | None, tuple[tuple[str, str], ...]]:
    """How sure the best reading of ``text`` is, its template and its values."""
    best: tuple[int, str | None, tuple[tuple[str, str], ...]] = (0, None, ())
    for template, prefix, suffix, regex, literal in _PATTERNS:
        if best[0] >= len(text):
            break
        if not (text.startswith(prefix) and text.endswith(suffix)):
            continue
        found = regex.fullmatch(text)
        if found is None:
            continue
        values = tuple(found.groupdict().items())
        score = literal + sum(
            _read(value)[0]
            for name, value in values
            if name not in VERBATIM and not _GROUPED.fullmatch(value) and len(value) <= _NESTED_MAX
        )
        if score > best[0]:
            best = (score, template, values)
    return best


def _value(name: str, value: str) -> Any:
    if name in VERBATIM:
        return cut(value)
    if _GROUPED.fullmatch(value):
        return int(value.replace(",", ""))
    if len(value) <= _NESTED_MAX:
        nested = converted(value)
        if nested.get("text") != FOREIGN:
            return nested
    return cut(value)


def converted(english: str) -> dict[str, Any]:
    """The stored form of a Text for ``english`` ({} for "")."""
    if not english:
        return {}
    if len(english) <= LONGEST:
        _score, template, values = _read(english)
        if template is not None:
            stored: dict[str, Any] = {"text": template}
            if values:
                stored["params"] = {name: _value(name, value) for name, value in values}
            return stored
    return {"text": FOREIGN, "params": {"text": cut(english, CUT)}}


def converted_all(values: Any) -> Any:
    """A list of stored English strings (warnings, reasons) as stored texts."""
    if not isinstance(values, list):
        return values
    return [converted(value) if isinstance(value, str) else value for value in values]


def converted_report(report: Any) -> Any:
    """A message's match report with its texts (reasons, notes, warnings, defects, an
    archive's error, a refusal) as stored texts."""
    if not isinstance(report, dict) or not report:
        return report
    report = dict(report)
    for key in ("warnings", "defects"):
        if key in report:
            report[key] = converted_all(report[key])
    for key in ("note", "refused"):
        if isinstance(report.get(key), str):
            report[key] = converted(report[key])
    if isinstance(report.get("configs"), list):
        report["configs"] = [
            {**config, "reasons": converted_all(config.get("reasons", []))}
            if isinstance(config, dict)
            else config
            for config in report["configs"]
        ]
    if isinstance(report.get("attachments"), list):
        report["attachments"] = [
            {**attachment, "archive_error": converted(attachment.get("archive_error") or "")}
            if isinstance(attachment, dict) and isinstance(attachment.get("archive_error"), str)
            else attachment
            for attachment in report["attachments"]
        ]
    return report


def convert_rows(
    model: Any,
    *,
    reads: tuple[str, ...],
    writes: tuple[str, ...],
    convert: Any,
    where: Any,
    batch: int = 500,
) -> None:
    """Gives every row of ``model`` matching ``where`` its converted columns:
    ``convert(row)`` sets ``writes`` from ``reads``. Rows are read in primary-key order,
    ``batch`` at a time, with those columns only (a message's raw bytes stay unread)."""
    rows = model.objects.filter(where).order_by("pk").only("pk", *reads, *writes)
    last = None
    while True:
        page = rows if last is None else rows.filter(pk__gt=last)
        chunk = list(page[:batch])
        if not chunk:
            return
        for row in chunk:
            convert(row)
        model.objects.bulk_update(chunk, writes)
        last = chunk[-1].pk
