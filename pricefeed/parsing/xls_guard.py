"""Checks a legacy .xls before python-calamine opens it.

Calamine reads every sheet of an .xls when the workbook is opened and holds each as one
dense grid from its first to its last cell. Measured with python-calamine 0.9.1:

* a 5.6 KB file with one cell at row 65535, column 65535 makes it allocate that whole
  grid (4.3 billion cells) and abort the process; a cell at IV65536 costs 1.1 GB (the
  grid, and a copy of it when the sheet is read: 64 bytes per cell);
* it reserves memory for the used range a DIMENSIONS record claims, before any cell: a
  record whose last row is before its first wraps around to 4 billion rows and aborts;
* a shared-string table claiming 2 billion strings is reserved up front (48 GB);
* a sheet position (BOUNDSHEET8) that points at another sheet's records reads them again
  for every such sheet (and holds its grid again);
* one FORMULA record whose tokens ask for 255 spaces two thousand times takes 4 s to
  render (each space is inserted at the front of the text): 6 hours for 50 MB of them.

So the compound file is read here first (cfb.py: loops, sectors past the end and
oversized claims refused), then the BIFF records of the "Workbook" (or "Book") stream
as calamine reads them: the globals up to their EOF, then each sheet from its
BOUNDSHEET8 position up to its first EOF. Cell records place cells as calamine places
them: NUMBER, RK, MULRK, LABEL, LABELSST, RSTRING, BOOLERR, FORMULA (and a STRING
record at the last formula's cell, at A1 before any formula); BLANK and MULBLANK too,
which calamine 0.9.1 skips but a reader that formats them would place. ROW records are
not cells. Refused: a sheet whose cells span more than Limits.max_cells (lowered for a
small file: Limits.for_file), sheets that
span more in all, a DIMENSIONS claim over it (SheetTooLarge); a string table claiming
more strings than its bytes can hold, sheets that share records (more than the stream
read in all), a formula rendering more than FORMULA_SPACES spaces (WorkbookRefused).
One pass over the records.

Calamine copies a shared string into every LABELSST cell that refers to it
(textbudget), so the cells' text is added up over every sheet it holds: for each
LABELSST the length of its string (three UTF-8 bytes a character at most, from the
string table's character counts), for each LABEL and RSTRING twice its record (the text
is in the record: a byte or two a character, at most three in UTF-8); past
``Limits.max_text_bytes``, WorkbookRefused.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right

from core.storedtext import Text

from . import messages
from .cfb import CompoundFile
from .errors import CorruptFile, SheetTooLarge, WorkbookRefused
from .textbudget import check_text_bytes
from .types import Limits, limit_name

# BIFF record types.
EOF = 0x000A
FILEPASS = 0x002F
CONTINUE = 0x003C
BOUNDSHEET = 0x0085
SST = 0x00FC
DIMENSIONS = 0x0200
FORMULA = 0x0006
STRING = 0x0207
MULRK = 0x00BD
MULBLANK = 0x00BE
LABELSST = 0x00FD
LABEL = 0x0204
RSTRING = 0x00D6
# Records that place one cell at the (row, column) of their first four bytes.
CELLS = frozenset({0x0203, 0x027E, 0x00FD, 0x0204, 0x00D6, 0x0205, 0x0201})
_SPECIAL = frozenset({MULRK, MULBLANK, FORMULA, STRING, DIMENSIONS, EOF})

# Spaces a formula may ask for (PtgAttrSpace tokens: 0x19, 0x40 or 0x41, a kind 0-6,
# a count); each is inserted at the front of the rendered text by calamine.
FORMULA_SPACES = 1024
_ATTR_SPACE = re.compile(rb"(?=\x19[\x40\x41][\x00-\x06](.))", re.DOTALL)

_HEAD = struct.Struct("<HH").unpack_from
_HEAD_CELL = struct.Struct("<HHHH").unpack_from
_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_WRAP = 1 << 32


def check_xls(data: bytes, limits: Limits) -> int:
    """Refuse an .xls that would make calamine exhaust memory or time; see the module
    docstring. Raises CorruptFile, WorkbookRefused or SheetTooLarge; for a workbook that
    is safe to open, returns the cells calamine will hold reading it (every sheet's
    span, its formulas' span and a copy of the widest); 0 for one calamine will refuse
    itself (no workbook stream, encrypted)."""
    stream = CompoundFile(data).stream("Workbook", "Book")
    if stream is None:
        return 0
    return _Scan(stream, limits.for_file(len(data))).run()


class _Scan:
    def __init__(self, stream: bytes, limits: Limits) -> None:
        self.size = len(stream)
        self.buf = stream + b"\0" * 8  # a record head is read 8 bytes at a time
        self.limits = limits
        self.strings: list[int] = []  # UTF-8 bytes of each shared string, at most
        self.text = 0  # bytes the cells' text takes in the reader, at most

    def run(self) -> int:
        sheets = self._globals()
        if sheets is None:
            return 0
        spans: dict[int, tuple[int, int, int]] = {}  # position -> (end, cells, formulas)
        held = widest = read = 0
        for position, name in sheets:
            if position > self.size:
                raise CorruptFile(Text(messages.XLS_SHEET_PAST_END, sheet=name))
            if position not in spans:
                spans[position] = self._sheet(position, name)
                check_text_bytes(self.text, self.limits)
            end, cells, formulas = spans[position]
            held += cells + formulas
            widest = max(widest, cells)
            # Calamine reads each sheet's records from its position to its EOF: sheets
            # that share records make it read them again, once per sheet.
            read += end - position
            if read > self.size:
                raise WorkbookRefused(Text(messages.XLS_SHARED_RECORDS, sheet=name))
        # Calamine holds every sheet's grid (and its formulas' grid) from the start, and
        # python-calamine copies the grid of the sheet that is read.
        held += widest
        if held > self.limits.max_cells:
            raise SheetTooLarge(
                Text(
                    messages.XLS_CELLS_HELD,
                    cells=held,
                    limit=self.limits.max_cells,
                    setting=limit_name("max_cells"),
                )
            )
        return held

    def _globals(self) -> list[tuple[int, str]] | None:
        """The sheets as (position, name); None when calamine reads none (encrypted, or
        the globals end in a cut-off record: it stops there with an error)."""
        buf, size = self.buf, self.size
        sheets: list[tuple[int, str]] = []
        sst: tuple[int, int] | None = None  # (strings claimed, bytes so far)
        table: list[bytes] = []  # the string table: the SST's strings, its CONTINUEs
        pos = 0
        while pos + 4 <= size:
            kind, length = _HEAD(buf, pos)
            body = pos + 4
            pos = body + length
            if pos > size:
                return None
            if kind == CONTINUE:
                if sst is not None:
                    sst = (sst[0], sst[1] + length)
                    table.append(buf[body:pos])
                continue
            if sst is not None:
                self._check_sst(*sst)
                sst = None
            if kind == BOUNDSHEET and length >= 6:
                sheets.append((_U32(buf, body)[0], _sheet_name(buf[body + 6 : pos], len(sheets))))
            elif kind == SST and length >= 8:
                sst = (_I32(buf, body + 4)[0], length - 8)
                table = [buf[body + 8 : pos]]
            elif kind == FILEPASS and length >= 2 and _U16(buf, body)[0]:
                return None  # encrypted: calamine refuses it
            elif kind == EOF:
                break
        if sst is not None:
            self._check_sst(*sst)
        self.strings = _string_lengths(table)
        return sheets

    def _check_sst(self, claimed: int, size: int) -> None:
        # Each string takes at least 3 bytes (length and flags).
        if claimed > size // 3 + 1:
            raise WorkbookRefused(
                Text(messages.XLS_SHARED_STRINGS, claimed=claimed, most=size // 3 + 1)
            )

    def _sheet(self, pos: int, name: str) -> tuple[int, int, int]:
        """(end, cells, formulas) of the sheet whose records start at ``pos``: the span
        of its cells, and of its formulas (calamine keeps a grid of formula texts too)."""
        buf, size, limits = self.buf, self.size, self.limits
        head, cells, special = _HEAD_CELL, CELLS, _SPECIAL
        r_lo = c_lo = f_r_lo = f_c_lo = 1 << 20
        r_hi = c_hi = f_r_hi = f_c_hi = -1
        formula_row = formula_col = 0
        strings, known = self.strings, len(self.strings)
        text = 0
        while pos + 4 <= size:
            kind, length, row, col = head(buf, pos)
            pos += 4 + length
            if kind in cells:  # nearly every record: kept short
                # A short or truncated cell record stops calamine with an error; its
                # (row, column) here is then the next bytes: counting them is harmless.
                if row < r_lo:
                    r_lo = row
                if row > r_hi:
                    r_hi = row
                if col < c_lo:
                    c_lo = col
                if col > c_hi:
                    c_hi = col
                if kind == LABELSST:
                    if length >= 10 and (index := _U32(buf, pos - length + 6)[0]) < known:
                        text += strings[index]
                elif kind == LABEL or kind == RSTRING:
                    text += 2 * length
                continue
            if kind not in special:
                continue
            if pos > size:
                break  # truncated: calamine stops there with an error
            body = pos - length
            if kind == MULRK or kind == MULBLANK:
                if length < 6:
                    continue
                last = _U16(buf, pos - 2)[0]
                c_lo, c_hi = min(c_lo, last), max(c_hi, last)
            elif kind == FORMULA:
                if length < 4:
                    continue
                formula_row, formula_col = row, col
                f_r_lo, f_r_hi = min(f_r_lo, row), max(f_r_hi, row)
                f_c_lo, f_c_hi = min(f_c_lo, col), max(f_c_hi, col)
                if length >= 22:
                    self._check_formula(buf[body + 20 : pos], row, col, name)
            elif kind == STRING:
                row, col = formula_row, formula_col
            elif kind == DIMENSIONS:
                self._check_dimensions(buf[body:pos], name)
                continue
            else:  # EOF
                break
            r_lo, r_hi = min(r_lo, row), max(r_hi, row)
            c_lo, c_hi = min(c_lo, col), max(c_hi, col)
        end = min(pos, size)
        self.text += text
        if r_hi < 0:
            return end, 0, 0
        rows, cols = r_hi - r_lo + 1, c_hi - c_lo + 1
        if rows * cols > limits.max_cells:
            raise SheetTooLarge(
                Text(
                    messages.XLS_SHEET_SPAN,
                    sheet=name,
                    rows=rows,
                    columns=cols,
                    limit=limits.max_cells,
                    setting=limit_name("max_cells"),
                )
            )
        formulas = (f_r_hi - f_r_lo + 1) * (f_c_hi - f_c_lo + 1) if f_r_hi >= 0 else 0
        return end, rows * cols, formulas

    def _check_dimensions(self, record: bytes, name: str) -> None:
        """Calamine reserves (last row - first row + 1) x (last column - first column + 1)
        cells from a DIMENSIONS record, in 32-bit arithmetic that wraps."""
        if len(record) == 14:
            first_row, end_row, first_col, end_col = struct.unpack_from("<IIHH", record)
        elif len(record) == 10:
            first_row, end_row, first_col, end_col = struct.unpack_from("<HHHH", record)
        else:
            return  # calamine stops with an error
        if end_row >= 1 and end_col >= 1:
            last_row, last_col = end_row - 1, end_col - 1
        else:
            last_row, last_col = first_row, first_col
        rows = ((last_row - first_row) % _WRAP + 1) % _WRAP
        cols = ((last_col - first_col) % _WRAP + 1) % _WRAP
        if rows * cols > self.limits.max_cells:
            raise SheetTooLarge(
                Text(
                    messages.XLS_DIMENSIONS,
                    sheet=name,
                    rows=rows,
                    columns=cols,
                    limit=self.limits.max_cells,
                    setting=limit_name("max_cells"),
                )
            )

    def _check_formula(self, formula: bytes, row: int, col: int, name: str) -> None:
        # The formula's tokens (cce bytes after their length); a token's bytes may also
        # be another token's operand: counting every match bounds the spaces from above.
        cce = _U16(formula)[0]
        tokens = formula[2 : 2 + cce]
        if b"\x19" not in tokens:
            return
        spaces = sum(m.group(1)[0] for m in _ATTR_SPACE.finditer(tokens))
        if spaces > FORMULA_SPACES:
            raise WorkbookRefused(
                Text(
                    messages.XLS_FORMULA_SPACES,
                    sheet=name,
                    row=row + 1,
                    column=col + 1,
                    spaces=spaces,
                    limit=FORMULA_SPACES,
                )
            )


def _string_lengths(records: list[bytes]) -> list[int]:
    """The UTF-8 bytes each string of a shared-string table takes at most (three per
    character), by index, from the table's records as [MS-XLS] 2.5.293 lays them out:
    a string's characters cut by a record's end go on after one flags byte (their
    width); its formatting runs and phonetic data go on without one."""
    table = b"".join(records)
    bounds: list[int] = []
    at = 0
    for record in records[:-1]:
        at += len(record)
        bounds.append(at)
    lengths: list[int] = []
    pos, size = 0, len(table)
    while pos + 3 <= size:
        count, flags = _U16(table, pos)[0], table[pos + 2]
        pos += 3
        skip = 0
        if flags & 0x08 and pos + 2 <= size:  # rich text: formatting runs of 4 bytes
            skip += 4 * _U16(table, pos)[0]
            pos += 2
        if flags & 0x04 and pos + 4 <= size:  # phonetic data
            skip += _U32(table, pos)[0]
            pos += 4
        width = 2 if flags & 0x01 else 1
        left = count
        while left:
            i = bisect_right(bounds, pos)
            end = bounds[i] if i < len(bounds) else size
            step = min(left, (end - pos) // width)
            pos += step * width
            left -= step
            if not left or end >= size:
                break
            width = 2 if table[end] & 0x01 else 1
            pos = end + 1
        pos += skip
        lengths.append(3 * count)
    return lengths


def _sheet_name(record: bytes, index: int) -> str:
    """A BOUNDSHEET8 name (BIFF8: length, flags, characters), for messages only."""
    if len(record) >= 2:
        count, flags = record[0], record[1]
        raw = record[2 : 2 + count * (2 if flags & 1 else 1)]
        name = raw.decode("utf-16-le" if flags & 1 else "latin-1", "replace").replace("\0", "")
        if name.strip():
            return name[:31]
    return Text(messages.XLS_SHEET_NUMBER, number=index + 1)
