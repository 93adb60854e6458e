"""The workbook path: xlsx/xlsm and xls (after their guards, workbook_guard and
xls_guard) through python-calamine."""

from __future__ import annotations

import io

from core.storedtext import Text

from . import messages as m
from .deadline import Deadline
from .errors import (
    CorruptFile,
    EmptyFile,
    ParseError,
    SheetNotFound,
    UnsupportedFormat,
)
from .library_errors import described
from .rows import Sink
from .table import Table, read_table
from .types import (
    Limits,
    ParsedFile,
    ParseOptions,
)


def _calamine_failure(exc: BaseException) -> ParseError:
    name = type(exc).__name__
    if name == "PasswordError":
        return UnsupportedFormat(Text(m.FORMAT_UNSUPPORTED, format=m.FORMAT_ENCRYPTED))
    return CorruptFile(Text(m.WORKBOOK_DAMAGED, error=described(exc)))


def read_workbook(
    data: bytes,
    fmt: str,
    options: ParseOptions,
    limits: Limits,
    sink: Sink | None,
    deadline: Deadline | None = None,
) -> ParsedFile:
    from python_calamine import CalamineWorkbook

    try:
        wb = CalamineWorkbook.from_filelike(io.BytesIO(data))
        sheet = _choose_sheet(wb, options.sheet)
        start = sheet.start or (0, 0)
        merged = sheet.merged_cell_ranges or []
        rows = sheet.iter_rows()
    except ParseError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        raise _calamine_failure(exc) from None
    # iter_rows() starts at the sheet's first row (leading empty rows included) but at
    # its first used column: cell j of a row is column start[1] + j.
    deadline = deadline or Deadline(limits)
    deadline.check(m.AFTER_WORKBOOK_OPENED)
    table = Table(rows, typed=True, col_offset=start[1], merged=merged)
    result = read_table(table, options, limits, fmt, sink, deadline=deadline)
    result.sheet = sheet.name
    return result


def _choose_sheet(wb, wanted: str):
    names = list(wb.sheet_names)
    wanted = (wanted or "").strip()
    if wanted:
        folded = [n.strip().casefold() for n in names]
        if wanted in names:
            return wb.get_sheet_by_index(names.index(wanted))
        if wanted.casefold() in folded:
            return wb.get_sheet_by_index(folded.index(wanted.casefold()))
        if wanted.isdigit() and 1 <= int(wanted) <= len(names):
            return wb.get_sheet_by_index(int(wanted) - 1)
        listed = ", ".join(f"'{n}'" for n in names[:20])
        raise SheetNotFound(Text(m.SHEET_NOT_FOUND, sheet=wanted, sheets=listed))
    meta = list(wb.sheets_metadata)
    order = [i for i, m in enumerate(meta) if _visible(m)] + [
        i for i, m in enumerate(meta) if not _visible(m)
    ]
    for i in order:
        if "WorkSheet" not in str(meta[i].typ):
            continue
        sheet = wb.get_sheet_by_index(i)
        if sheet.height and sheet.width:
            return sheet
    raise EmptyFile(m.NO_SHEET)


def _visible(meta) -> bool:
    return str(meta.visible).endswith("Visible")
