"""Why a file cannot be read as a price list.

Every message is meant for operators: one line, no traceback, naming the file part,
the limit or the header cells involved. ``str(exc)`` is that message; an exception
raised without arguments carries its class docstring.
"""

from __future__ import annotations


class ParseError(Exception):
    """The file cannot be read as a price list."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class UnsupportedFormat(ParseError):
    """The file is not a spreadsheet or a text table."""


class UnsupportedArchive(ParseError):
    """The archive type (or an archive feature such as encryption) is not supported."""


class CorruptFile(ParseError):
    """The file is damaged or truncated."""


class ArchiveRefused(ParseError):
    """The archive was refused for safety; nothing from it was used."""


class ArchiveTooLarge(ArchiveRefused):
    """The archive inflates to more than allowed."""


class TooManyEntries(ArchiveRefused):
    """The archive holds more entries than allowed."""


class NestingTooDeep(ArchiveRefused):
    """Archives are nested deeper than allowed."""


class UnsafeEntryName(ArchiveRefused):
    """An archive entry has an unsafe name (absolute, '..', or a link)."""


class OverlappingEntries(ArchiveRefused):
    """Archive entries share their data (a zip bomb construction)."""


class TarHeaderRefused(ArchiveRefused):
    """A tar archive carries an oversized or malformed extended header (pax or GNU long
    name): refused before the tar reader parses it."""


class TooManyFiles(ArchiveRefused):
    """The attachment holds more files than the caller takes."""


class FileTooLarge(ParseError):
    """The file is larger than allowed."""


class SheetTooLarge(ParseError):
    """The sheet spans more cells than allowed."""


class WorkbookRefused(ParseError):
    """The workbook holds a construction that would exhaust the spreadsheet reader's
    memory or time; refused."""


class XmlRefused(ParseError):
    """The workbook's XML declares a DTD or entities (XML bomb / XXE); refused."""


class SheetNotFound(ParseError):
    """The configured sheet is not in the workbook."""


class EmptyFile(ParseError):
    """The file holds no rows."""


class NoHeaderRow(ParseError):
    """No header row found."""


class MissingColumns(ParseError):
    """Required columns are missing from the header row."""


class TooManyRows(ParseError):
    """The file has more rows than allowed."""


class LineTooLong(ParseError):
    """A line of the text table is longer than allowed."""


class ParseTimeLimit(ParseError):
    """Reading the file took longer than allowed."""
