"""The row errors and file errors the library reports: msgids in English.

The library imports no Django, so it cannot translate: it reports a ``Text`` (core.storedtext,
which imports nothing), a msgid with its values, marked with ``gettext_noop`` (the name
makemessages looks for) so that it is in pricefeed's catalogue. The Text is stored as it
is and said in the reader's language where it is shown.
"""

from __future__ import annotations

from core.storedtext import gettext_noop

PRICE_MISSING = gettext_noop("price is missing")
SKU_MISSING = gettext_noop("sku is missing")
SKU_NUL = gettext_noop("sku contains a NUL character")
NAME_NUL = gettext_noop("name contains a NUL character")
CURRENCY_NUL = gettext_noop("currency contains a NUL character")
SKU_TOO_LONG = gettext_noop("sku is longer than %(limit)s characters (%(length)s)")
CURRENCY_TOO_LONG = gettext_noop("currency %(value)s is longer than %(limit)s characters")
PRICE_NOT_A_NUMBER = gettext_noop("price %(value)s is not a number")
PRICE_NOT_POSITIVE = gettext_noop(
    "price %(value)s is zero or below (the config does not allow such prices)"
)
PRICE_OUT_OF_RANGE = gettext_noop(
    "price %(value)s is out of range (at most %(digits)s digits before the decimal point)"
)
LINE_TOO_LONG = gettext_noop(
    "line %(line)s is %(size)s bytes long, more than %(limit)s (%(setting)s): not read"
)
LINE_NOT_UTF8 = gettext_noop("line %(line)s is not valid UTF-8")
RECORD_TOO_LONG = gettext_noop(
    "line %(line)s: a record longer than %(limit)s characters (%(setting)s): not read"
)
ABOVE_THE_DATA = gettext_noop("%(problem)s (above the data)")
# A row warning: the row is stored, its invalid barcodes kept apart (barcodes_invalid).
BARCODE_INVALID = gettext_noop("invalid barcode(s) %(codes)s: kept apart, not used for matching")
# A warning: a configured price or stock column the table does not have.
EXTRA_COLUMN_MISSING = gettext_noop("column %(column)s for %(what)s is not in the table: not read")
# A warning: a configured one- or two-letter column ("ID") that the header row has as a
# header text is read as that header, not as the column with that letter.
LETTER_READ_AS_HEADER = gettext_noop(
    "%(field)s is read from the column headed %(text)s (column %(column)s), not from "
    "column %(text)s"
)


# --- file errors ------------------------------------------------------------------------
# Why a file (or an attachment) cannot be read at all: a ParseError's message. A value
# that names a part of the file (``where``, ``label``, ``what``) is itself made from a
# template below (ARCHIVE, ENTRY, ...), a size from MIB or BYTES, a limit's setting from
# LIMIT_SETTING; those are translated too where the text is shown. File, entry, part and
# sheet names are values shown as they are (VERBATIM).

# Archives (archives.py).
TOO_MANY_FILES = gettext_noop(
    "%(where)s: at least %(files)s files, more than the %(limit)s taken from one message"
)
NO_FILES_TAKEN = gettext_noop("%(where)s: 1 file, more than the %(limit)s taken")
TOO_MANY_ENTRIES = gettext_noop("%(where)s: more than %(limit)s archive entries in all")
INFLATES_PAST_CAP = gettext_noop("%(label)s inflates to more than %(limit)s")
INFLATES_PAST_TOTAL = gettext_noop(
    "%(label)s: the attachment inflates to more than %(limit)s in all"
)
INFLATES_PAST_RATIO = gettext_noop(
    "%(label)s inflates more than %(ratio)sx its compressed size (%(compressed)s bytes): "
    "a zip bomb?"
)
NAME_CONTROL = gettext_noop("%(where)s: entry %(name)s has control characters in its name")
NAME_ABSOLUTE = gettext_noop("%(where)s: entry %(name)s has an absolute path")
NAME_DRIVE = gettext_noop("%(where)s: entry %(name)s names a drive")
NAME_CLIMBS = gettext_noop("%(where)s: entry %(name)s climbs out of the archive ('..')")
NAME_EMPTY = gettext_noop("%(where)s: entry %(name)s has an empty name")
ENTRY_SYMLINK = gettext_noop("%(where)s: entry %(name)s is a symbolic link")
ENTRY_SPECIAL = gettext_noop("%(where)s: entry %(name)s is a special file (device, pipe or socket)")
ZIP_DAMAGED = gettext_noop("%(where)s: damaged zip archive (%(error)s)")
NO_LOCAL_HEADER = gettext_noop("%(where)s: entry %(name)s has no local header")
ENTRIES_OVERLAP = gettext_noop(
    "%(where)s: entry %(name)s overlaps another entry's data (overlapping-entry zip bomb)"
)
DATA_OVERLAPS_DIRECTORY = gettext_noop("%(where)s: entry data overlaps the central directory")
ENTRY_ENCRYPTED = gettext_noop("%(label)s: encrypted (password-protected) archive")
ENTRY_COMPRESSION = gettext_noop("%(label)s: unsupported compression (%(error)s)")
ENTRY_DAMAGED = gettext_noop("%(label)s: damaged archive entry (%(error)s)")
GZIP_DAMAGED = gettext_noop("%(label)s: damaged gzip data (%(error)s)")
GZIP_TRUNCATED = gettext_noop("%(label)s: gzip data is truncated")
TAR_HEADER_SIZE = gettext_noop("%(where)s: a tar header at byte %(offset)s has no readable size")
TAR_LONG_NAME = gettext_noop(
    "%(where)s: a GNU long-name tar header of %(size)s bytes, more than %(limit)s: refused"
)
TAR_PAX_SIZE = gettext_noop(
    "%(where)s: a pax extended tar header of %(size)s bytes, more than %(limit)s KiB "
    "(the CVE-2024-6232 shape): refused"
)
TAR_PAX_DIGITS = gettext_noop(
    "%(where)s: a pax extended tar header holds a run of more than %(limit)s digits "
    "(the CVE-2024-6232 shape): refused"
)
TAR_PAX_RECORD = gettext_noop(
    "%(where)s: a pax extended tar header has a malformed record at byte %(offset)s: refused"
)
TAR_PAX_SPARSE = gettext_noop("%(where)s: a GNU sparse file (pax header)")
TAR_PAX_TRAILING = gettext_noop(
    "%(where)s: a pax extended tar header has bytes after its records: refused"
)
TAR_DAMAGED = gettext_noop("%(where)s: damaged tar archive (%(error)s)")
TAR_LINK = gettext_noop("%(where)s: entry %(name)s is a link")
TAR_SPECIAL = gettext_noop("%(where)s: entry %(name)s is a special file")
TAR_SPARSE = gettext_noop("%(where)s: entry %(name)s is a sparse file")
TAR_ENTRY_TOO_LARGE = gettext_noop("entry '%(path)s' is larger than %(limit)s")
ATTACHMENT_TOO_LARGE = gettext_noop("%(where)s is %(size)s bytes, more than %(limit)s")
ARCHIVE_UNSUPPORTED = gettext_noop("unsupported archive: %(format)s (%(where)s)")
NESTED_TOO_DEEP = gettext_noop("archive '%(path)s' is nested more than %(limit)s levels deep")

# Compound files, the container of a legacy .xls (cfb.py).
CFB_NO_HEADER = gettext_noop("damaged workbook: not a compound file (no OLE2 header)")
CFB_SECTOR_SHIFT = gettext_noop("damaged workbook: sector shift %(shift)s (expected 9 or 12)")
CFB_MINI_SHIFT = gettext_noop("damaged workbook: mini sector shift is not 6")
CFB_HEADER_CUT = gettext_noop("damaged workbook: truncated compound-file header")
CFB_DIFAT_CLAIM = gettext_noop(
    "workbook: the compound-file header makes the reader reserve a DIFAT of %(claimed)s "
    "entries, more than %(limit)s: refused (it would abort)"
)
CFB_FAT_SECTOR = gettext_noop("damaged workbook: FAT sector %(sector)s is past the end of the file")
CFB_ENTRY_CUT = gettext_noop("damaged workbook: a directory entry is cut short")
CFB_EMPTY_ROOT = gettext_noop("damaged workbook: empty root directory")
CFB_CLAIM = gettext_noop(
    "damaged workbook: the compound file claims %(claimed)s bytes for %(what)s, more than "
    "the file's %(size)s"
)
CFB_SECTOR_PAST_END = gettext_noop(
    "damaged workbook: %(what)s names sector %(sector)s, past the end of the file"
)
CFB_LOOP = gettext_noop("damaged workbook: %(what)s loops (sector %(sector)s twice)")
CFB_PAST_FAT = gettext_noop("damaged workbook: %(what)s runs past the FAT")
CFB_MINI_PAST_END = gettext_noop(
    "damaged workbook: %(what)s names mini sector %(sector)s, past the mini stream"
)
CFB_MINI_LOOP = gettext_noop("damaged workbook: %(what)s loops (mini sector %(sector)s)")
# What a chain or a claim is for (``what`` above).
CFB_FAT = gettext_noop("its FAT")
CFB_DIRECTORY = gettext_noop("its directory")
CFB_MINI_FAT = gettext_noop("its mini FAT")
CFB_DIFAT_CHAIN = gettext_noop("its DIFAT chain")
CFB_MINI_STREAM = gettext_noop("its mini stream")
CFB_STREAM = gettext_noop("stream '%(name)s'")

# Legacy .xls records (xls_guard.py).
XLS_SHEET_PAST_END = gettext_noop(
    "damaged workbook: sheet '%(sheet)s' starts past the end of the workbook"
)
XLS_SHARED_RECORDS = gettext_noop(
    "workbook: its sheets share records (sheet '%(sheet)s' is read from where another one "
    "is): refused (the reader would read them once per sheet)"
)
XLS_CELLS_HELD = gettext_noop(
    "workbook: reading it holds %(cells)s cells (every sheet's span, its formulas' span and "
    "a copy of the sheet read), more than %(limit)s cells (%(setting)s): refused (it would "
    "exhaust memory)"
)
WORKBOOK_TEXT_BYTES = gettext_noop(
    "workbook: its cells' text takes %(size)s bytes in the spreadsheet reader (a shared "
    "string is copied into every cell that refers to it), more than %(limit)s "
    "(%(setting)s): refused (it would exhaust memory)"
)
XLS_SHARED_STRINGS = gettext_noop(
    "workbook: its shared-string table claims %(claimed)s strings but holds at most "
    "%(most)s: refused (it would exhaust memory)"
)
XLS_SHEET_SPAN = gettext_noop(
    "workbook sheet '%(sheet)s' places cells across %(rows)s rows x %(columns)s columns, "
    "more than %(limit)s cells (%(setting)s): refused (it would exhaust memory)"
)
XLS_DIMENSIONS = gettext_noop(
    "workbook sheet '%(sheet)s' claims a used range (DIMENSIONS) of %(rows)s rows x "
    "%(columns)s columns, more than %(limit)s cells (%(setting)s): refused (the reader "
    "would reserve memory for all of it)"
)
XLS_FORMULA_SPACES = gettext_noop(
    "workbook sheet '%(sheet)s': the formula at row %(row)s, column %(column)s asks for "
    "%(spaces)s spaces, more than %(limit)s: refused (the reader would take minutes to "
    "render it)"
)
XLS_SHEET_NUMBER = gettext_noop("sheet %(number)s")  # a sheet without a name

# xlsx/xlsm parts (workbook_guard.py).
XML_PROLOG = gettext_noop(
    "workbook part '%(name)s' has an XML prolog longer than %(limit)s: refused"
)
XML_DTD = gettext_noop(
    "workbook part '%(name)s' declares a DTD or entities (<!DOCTYPE>/<!ENTITY>): refused as "
    "a possible XML bomb or external-entity (XXE) attack"
)
XML_SHARED_STRINGS = gettext_noop(
    "workbook part '%(name)s' claims %(claimed)s shared strings but holds at most "
    "%(most)s: refused (it would exhaust memory)"
)
XLSX_SHEET_SPAN = gettext_noop(
    "workbook part '%(name)s' places cells across %(rows)s rows x %(columns)s columns, "
    "more than %(limit)s cells: refused (it would exhaust memory)"
)

# Reading a file (reader.py, workbook.py, textfile.py, table.py, rows.py, deadline.py).
FILE_TOO_LARGE = gettext_noop("file is %(size)s bytes, more than %(limit)s")
FILE_EMPTY = gettext_noop("the file is empty")
ARCHIVE_NOT_EXPANDED = gettext_noop("unsupported format: %(format)s archive (expand it first)")
FORMAT_UNSUPPORTED = gettext_noop("unsupported format: %(format)s")
# What a format is, where its name alone would not say (``format`` above).
FORMAT_ENCRYPTED = gettext_noop("encrypted (password-protected) workbook")
FORMAT_HTML = gettext_noop("html (a web page, perhaps saved with a spreadsheet's name)")
FORMAT_XML_SPREADSHEET = gettext_noop("Excel 2003 XML spreadsheet")
FORMAT_XLSB = gettext_noop("xlsb (binary workbook; save it as xlsx)")
FORMAT_ODS = gettext_noop("ods (save it as xlsx)")
FORMAT_IMAGE = gettext_noop("image")
WORKBOOK_DAMAGED = gettext_noop("damaged workbook: %(error)s")
SHEET_NOT_FOUND = gettext_noop("sheet '%(sheet)s' not found; the workbook has: %(sheets)s")
NO_SHEET = gettext_noop("the workbook has no non-empty sheet")
TEXT_MALFORMED = gettext_noop("malformed text table at line %(line)s: %(error)s")
# The csv module's own words, for a field it would refuse too (``error`` above).
CSV_FIELD_TOO_LARGE = gettext_noop("field larger than field limit (%(limit)s)")
NO_ROWS = gettext_noop("the file holds no rows")
TOO_MANY_ROWS = gettext_noop("more than %(limit)s data rows")
LONG_LINE_THEN = gettext_noop("%(unread)s; and then: %(error)s")
UNREAD_ROWS = gettext_noop("%(error)s (unread: %(unread)s)")
COLUMN_PAST_TABLE = gettext_noop(
    "column %(column)s for %(field)s is past the last column of the table (%(last)s)"
)
NO_HEADER_WITH = gettext_noop("no header row in the first %(rows)s rows has %(wanted)s")
NO_HEADER = gettext_noop(
    "no header row in the first %(rows)s rows: expected one naming the article "
    "(e.g. Артикул, Код, SKU) or the name (Наименование, Name) and the price (Цена, Price)"
)
MISSING_COLUMNS = gettext_noop("missing columns: %(missing)s. Header row %(row)s has: %(cells)s")
MISSING_EXAMPLES = gettext_noop("%(field)s (e.g. %(examples)s)")  # one missing column
NO_CELLS = gettext_noop("none")  # a header row without a cell
TIME_LIMIT = gettext_noop(
    "reading the file took more than %(seconds)s s (%(setting)s); stopped %(where)s"
)
# Where a parse stopped (``where`` above).
AT_ROW = gettext_noop("at row %(row)s")
IN_HEADER_SEARCH = gettext_noop("in the header search, row %(row)s")
IN_HEADER_SEARCH_MERGED = gettext_noop("in the header search (merged cells)")
AFTER_WORKBOOK_OPENED = gettext_noop("after the workbook was opened")

# The parts of a file a message names (``where``, ``label``), and sizes.
ATTACHMENT = gettext_noop("attachment")
ATTACHMENT_ARCHIVE = gettext_noop("archive 'attachment'")
ARCHIVE = gettext_noop("archive '%(path)s'")
ENTRY = gettext_noop("entry '%(path)s'")
GZIP = gettext_noop("gzip '%(path)s'")
WORKBOOK = gettext_noop("workbook")
WORKBOOK_PART = gettext_noop("workbook part '%(name)s'")
MIB = gettext_noop("%(count)s MiB")
BYTES = gettext_noop("%(count)s bytes")
LIMIT_SETTING = gettext_noop("%(field)s, setting %(setting)s")

# What a reader is told of a library's own error (zipfile, tarfile, gzip, calamine),
# whose text is English and for a programmer: our sentence for the ones a damaged file
# commonly gives, a general one for the rest.
NOT_A_ZIP = gettext_noop("not a zip archive")
ZIP_TRUNCATED = gettext_noop("the archive is cut short")
CHECKSUM_WRONG = gettext_noop("a checksum does not match: the data is damaged")
NOT_GZIP = gettext_noop("not gzip data")
STRUCTURE_UNREADABLE = gettext_noop("its structure cannot be read")
# The csv module's errors, in our words (library_errors.csv_described).
CSV_NUL = gettext_noop("the text holds a NUL character: is it a text table at all?")
CSV_NEW_LINE = gettext_noop("a line break inside a field that is not in quotes")
CSV_AFTER_QUOTE = gettext_noop("a closing quote is not followed by the delimiter")
CSV_CUT_SHORT = gettext_noop("the text ends inside a quoted field")
