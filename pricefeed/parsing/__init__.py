"""Supplier price lists: bytes in, typed rows out. A library: no Django, no database,
no files; the caller builds its Limits (pricefeed.limits.parse_limits from settings).

    members = expand(attachment_bytes, "prices.zip", Limits(max_rows=100_000))
    for member in members:
        parsed = parse(member.data, ParseOptions(columns={"price": "Цена опт"}), limits)

See docs in each module: reader (parse: format detection and dispatch), archives (caps,
zip-slip), workbook_guard (XML and memory bombs before calamine), workbook (the calamine
path), textfile (the text path), text (encodings, delimiters), plainlines (quote-free
tables), table (header location, then the rows), rows (row conversion, row errors),
numbers (separator rules), headers (synonyms), types (limits, options, results).
"""

from __future__ import annotations

from .archives import expand
from .detect import detect_format
from .errors import (
    ArchiveRefused,
    ArchiveTooLarge,
    CorruptFile,
    EmptyFile,
    FileTooLarge,
    MissingColumns,
    NestingTooDeep,
    NoHeaderRow,
    OverlappingEntries,
    ParseError,
    SheetNotFound,
    SheetTooLarge,
    TooManyEntries,
    TooManyRows,
    UnsafeEntryName,
    UnsupportedArchive,
    UnsupportedFormat,
    XmlRefused,
)
from .reader import parse
from .types import FIELDS, Limits, Member, ParsedFile, ParseOptions, Row, RowBlock
from .workbook_guard import check_xml_defences

__all__ = [
    "FIELDS",
    "ArchiveRefused",
    "ArchiveTooLarge",
    "CorruptFile",
    "EmptyFile",
    "FileTooLarge",
    "Limits",
    "Member",
    "MissingColumns",
    "NestingTooDeep",
    "NoHeaderRow",
    "OverlappingEntries",
    "ParseError",
    "ParseOptions",
    "ParsedFile",
    "Row",
    "RowBlock",
    "SheetNotFound",
    "SheetTooLarge",
    "TooManyEntries",
    "TooManyRows",
    "UnsafeEntryName",
    "UnsupportedArchive",
    "UnsupportedFormat",
    "XmlRefused",
    "check_xml_defences",
    "detect_format",
    "expand",
    "parse",
]
