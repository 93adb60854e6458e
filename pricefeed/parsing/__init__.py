"""Supplier price lists: bytes in, typed rows out. A library: no Django, no database,
no files; the caller builds its Limits (pricefeed.limits.parse_limits from settings).

    members = expand(attachment_bytes, "prices.zip", Limits(max_rows=100_000))
    for member in members:
        parsed = parse(member.data, ParseOptions(columns={"price": "Цена опт"}), limits)

See docs in each module: reader (parse: format detection and dispatch; check_file: the
checks before reading, with the cells a workbook spans), archives (caps,
zip-slip, tar header guard), workbook_guard (XML and memory bombs in an xlsx before
calamine), xls_guard and cfb (memory and time bombs in an xls before calamine), workbook
(the calamine path), textfile (the text path), text (encodings, delimiters), plainlines
(quote-free tables), table (header location, then the rows), rows (row conversion, row
errors), numbers (separator rules), headers (synonyms), deadline (the time budget),
types (limits, options, results, what the price table stores).
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
    LineTooLong,
    MissingColumns,
    NestingTooDeep,
    NoHeaderRow,
    OverlappingEntries,
    ParseError,
    ParseTimeLimit,
    SheetNotFound,
    SheetTooLarge,
    TarHeaderRefused,
    TooManyEntries,
    TooManyFiles,
    TooManyRows,
    UnsafeEntryName,
    UnsupportedArchive,
    UnsupportedFormat,
    WorkbookRefused,
    XmlRefused,
)
from .reader import CheckedFile, check_file, parse
from .types import (
    ALL_FIELDS,
    CURRENCY_MAX_LENGTH,
    EXTRA_FIELDS,
    EXTRA_VALUES,
    FIELDS,
    NAME_MAX_LENGTH,
    NUMBER_DECIMAL_PLACES,
    NUMBER_MAX_DIGITS,
    SETTING_PREFIX,
    SKU_MAX_LENGTH,
    ExtraColumns,
    Limits,
    Member,
    ParsedFile,
    ParseOptions,
    Row,
    RowBlock,
    limit_name,
)
from .workbook_guard import check_xml_defences

__all__ = [
    "ALL_FIELDS",
    "CURRENCY_MAX_LENGTH",
    "EXTRA_FIELDS",
    "EXTRA_VALUES",
    "FIELDS",
    "NAME_MAX_LENGTH",
    "NUMBER_DECIMAL_PLACES",
    "NUMBER_MAX_DIGITS",
    "SETTING_PREFIX",
    "SKU_MAX_LENGTH",
    "ArchiveRefused",
    "ArchiveTooLarge",
    "CheckedFile",
    "CorruptFile",
    "EmptyFile",
    "ExtraColumns",
    "FileTooLarge",
    "Limits",
    "LineTooLong",
    "Member",
    "MissingColumns",
    "NestingTooDeep",
    "NoHeaderRow",
    "OverlappingEntries",
    "ParseError",
    "ParseOptions",
    "ParseTimeLimit",
    "ParsedFile",
    "Row",
    "RowBlock",
    "SheetNotFound",
    "SheetTooLarge",
    "TarHeaderRefused",
    "TooManyEntries",
    "TooManyFiles",
    "TooManyRows",
    "UnsafeEntryName",
    "UnsupportedArchive",
    "UnsupportedFormat",
    "WorkbookRefused",
    "XmlRefused",
    "check_file",
    "check_xml_defences",
    "detect_format",
    "expand",
    "limit_name",
    "parse",
]
