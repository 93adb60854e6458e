"""parse(): bytes of one price list in, typed rows out.

Detects the format and hands the bytes to the workbook path (workbook.py) or the text
path (textfile.py); both read through table.py (header, then rows.py's conversion)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.storedtext import Text

from . import messages as m
from .archives import ARCHIVE_FORMATS, UNSUPPORTED_ARCHIVES, mib
from .deadline import Deadline
from .detect import detect_format
from .errors import (
    EmptyFile,
    FileTooLarge,
    UnsupportedArchive,
    UnsupportedFormat,
)
from .rows import Sink
from .textfile import read_text
from .types import (
    Limits,
    ParsedFile,
    ParseOptions,
)
from .workbook import read_workbook
from .workbook_guard import check_workbook
from .xls_guard import check_xls

_FORMAT_NOTES = {
    "encrypted": m.FORMAT_ENCRYPTED,
    "html": m.FORMAT_HTML,
    "xml-spreadsheet": m.FORMAT_XML_SPREADSHEET,
    "xlsb": m.FORMAT_XLSB,
    "ods": m.FORMAT_ODS,
    "image": m.FORMAT_IMAGE,
}


@dataclass(frozen=True)
class CheckedFile:
    """A file its format's guard let through (check_file): its format and the cells the
    spreadsheet reader will hold reading it (0 for a text table, which is streamed:
    nothing is held per cell). ``deadline`` started before the guard ran, so that the
    parse's time budget counts the guard too."""

    data: bytes = field(repr=False)
    format: str
    cells: int
    deadline: Deadline = field(repr=False, compare=False)


def check_file(data: bytes, limits: Limits) -> CheckedFile:
    """The checks parse() makes before it reads: the file's size, its format, and for a
    workbook its guard (workbook_guard, xls_guard), which measures the cells it spans.
    Raises what parse() raises for a file it refuses unread; a caller may spend the
    cells (a message's budget) before it hands the CheckedFile to parse()."""
    deadline = Deadline(limits)
    if len(data) > limits.max_file_bytes:
        raise FileTooLarge(Text(m.FILE_TOO_LARGE, size=len(data), limit=mib(limits.max_file_bytes)))
    fmt = detect_format(data)
    cells = 0
    if fmt in ("xlsx", "xlsm"):
        cells = check_workbook(data, limits)
    elif fmt == "xls":
        cells = check_xls(data, limits)
    elif fmt == "empty":
        raise EmptyFile(m.FILE_EMPTY)
    elif fmt in ARCHIVE_FORMATS or fmt in UNSUPPORTED_ARCHIVES:
        raise UnsupportedArchive(Text(m.ARCHIVE_NOT_EXPANDED, format=fmt))
    elif fmt != "csv":
        raise UnsupportedFormat(Text(m.FORMAT_UNSUPPORTED, format=_FORMAT_NOTES.get(fmt, fmt)))
    return CheckedFile(data, fmt, cells, deadline)


def parse(
    data: bytes,
    options: ParseOptions | None = None,
    limits: Limits | None = None,
    *,
    sink: Sink | None = None,
    checked: CheckedFile | None = None,
) -> ParsedFile:
    """Read one price list (one Member of an attachment) into typed rows.

    Detects the format by content (xlsx/xlsm/xls through python-calamine after the
    workbook guards, csv/tsv/txt through the csv module), finds the header row within
    the first 50 rows, maps the columns (options.columns first, then synonyms) and reads
    every row below it. Rows failing on their own go to ``errors``; a file that cannot
    be read at all raises a ParseError subclass whose message is for operators.

    With a ``sink``, good rows are not kept in ``ParsedFile.rows`` (it stays empty) but
    handed to ``sink`` in lists of about SINK_CHUNK rows, in file order, while the file
    is read; a list is reused once the sink returns, so the sink must not keep it. A row
    is handed over only once it is final (numbers whose separator the file had not yet
    settled are held back until it does). ``rows_ok`` counts the good rows either way.
    A sink with a ``take_block`` method is handed the rows a text table converts a
    column at a time as RowBlocks instead (the same rows, prices as text), in file
    order with the lists; it may keep a block.
    When parse() raises, rows already handed over must be discarded by the caller.

    ``checked``: what check_file() said of these same bytes (under the same limits),
    when the caller checked them first; otherwise parse() checks them itself.

    Hostile files are refused or cut within the Limits (see Limits): rows past
    ``max_columns`` cells are cut (``ParsedFile.warnings`` says so); a value the price
    table cannot store makes its row a row error; over ``max_seconds`` in all,
    ParseTimeLimit.
    """
    options = options or ParseOptions()
    limits = limits or Limits()
    if checked is None:
        checked = check_file(data, limits)
    elif checked.data is not data:
        raise ValueError("parse() was given the check of other bytes")
    fmt, deadline = checked.format, checked.deadline
    if fmt == "csv":
        return read_text(data, options, limits, sink, deadline)
    return read_workbook(data, fmt, options, limits, sink, deadline)
