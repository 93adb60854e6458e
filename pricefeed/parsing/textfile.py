"""The text path: csv/tsv/txt, decoded a chunk at a time, split by PlainLines where no
quote character is used and by the csv module (through Records) otherwise."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import Any

from core.storedtext import Text

from . import messages as m
from .deadline import Deadline
from .errors import (
    CorruptFile,
)
from .library_errors import csv_described
from .plainlines import PlainLines
from .rows import Sink
from .table import Table, read_table
from .text import SAMPLE, choose_encoding, detect_delimiter
from .types import (
    ColumnCuts,
    Limits,
    ParsedFile,
    ParseOptions,
    limit_name,
)

# What surrogateescape makes of bytes that are not UTF-8: a valid UTF-8 text never
# decodes to a lone surrogate, so a line holding one had an undecodable byte.
_ESCAPED = re.compile("[\udc80-\udcff]")


def read_text(
    data: bytes,
    options: ParseOptions,
    limits: Limits,
    sink: Sink | None,
    deadline: Deadline | None = None,
) -> ParsedFile:
    # The encoding is settled for the whole file before a row is read: rows handed to a
    # sink cannot be taken back.
    encoding, clean = choose_encoding(data)
    delimiter = detect_delimiter(
        data[:SAMPLE].decode(encoding, "replace"), complete=len(data) <= SAMPLE
    )
    utf8 = encoding.startswith("utf-8")
    reader: PlainLines | Records
    if PlainLines.fits(data, encoding):
        # Strict: a line that does not decode is noted and read as an empty row.
        reader = PlainLines(
            data,
            encoding,
            "strict" if utf8 else "replace",
            delimiter,
            max_columns=limits.max_columns,
            max_line_bytes=limits.max_line_bytes,
        )
    else:
        reader = Records(data, encoding, delimiter, limits, undecodable=not clean)
    # No NUL byte, no NUL character: the row loops need not look (UTF-16 has NUL bytes).
    nul = b"\0" in data
    try:
        result = read_table(
            Table(reader, typed=False), options, limits, "csv", sink, deadline=deadline, nul=nul
        )
    except csv.Error as exc:
        raise CorruptFile(
            Text(m.TEXT_MALFORMED, line=reader.line_num, error=csv_described(exc))
        ) from None
    result.encoding = encoding
    result.delimiter = delimiter
    return result


class _Skip(Exception):
    """A record that is not read (the message says why); raised through csv.reader."""


class Records:
    """csv.reader's rows of a text table with quoted fields, bounded on hostile input.

    A record (one line, or several when a quoted field holds line ends) longer than
    Limits.max_line_bytes characters, and in a file read as UTF-8 despite some bad
    lines (``undecodable``) a line that does not decode, is never handed to csv.reader
    whole: it reads as an empty row, noted in ``marked`` (0-based row index -> reason),
    and reading goes on with a new csv.reader at the next line. Rows are cut to
    Limits.max_columns cells (``cuts``). ``line_num`` counts physical lines, as
    csv.reader's does.
    """

    def __init__(
        self, data: bytes, encoding: str, delimiter: str, limits: Limits, *, undecodable: bool
    ) -> None:
        errors = "surrogateescape" if undecodable else "replace"
        if encoding.startswith("utf-8") and not undecodable:
            errors = "strict"  # all of it is UTF-8 (choose_encoding checked)
        self.stream = io.TextIOWrapper(
            io.BytesIO(data), encoding=encoding, errors=errors, newline=""
        )
        self.delimiter = delimiter
        self.max_chars = limits.max_line_bytes
        self.width = limits.max_columns
        self.undecodable = undecodable
        # A window of half the limit without a line end is where a long line must be;
        # without one, lines are read the fast way (TextIOWrapper's own iteration).
        self.long_lines = _has_long_line(data, limits.max_line_bytes)
        self._lines_before = 0  # read by the csv.readers before this one
        self._reader: Any = None
        self.marked: dict[int, str] = {}
        self.cuts = ColumnCuts()

    @property
    def line_num(self) -> int:
        """Physical lines read so far, as csv.reader's line_num."""
        reader = self._reader
        return self._lines_before + (reader.line_num if reader is not None else 0)

    def __iter__(self) -> Iterator[list[str]]:
        state = [0]  # characters of the record being read
        index = 0  # rows handed out
        width, cuts = self.width, self.cuts
        while True:
            reader = self._reader = csv.reader(self._lines(state), delimiter=self.delimiter)
            try:
                for row in reader:
                    state[0] = 0
                    index += 1
                    if len(row) > width:
                        cuts.note(index)
                        del row[width:]
                    yield row
                return
            except _Skip as skip:
                # The line that made the record too long was taken but not counted.
                self._lines_before += reader.line_num + 1
                self._reader = None
                self.marked[index] = str(skip)
                state[0] = 0
                index += 1
                yield []

    def _lines(self, state: list[int]) -> Iterator[str]:
        limit = self.max_chars
        if not self.long_lines and not self.undecodable:
            for line in self.stream:  # the fast way: no physical line can be too long
                state[0] += len(line)
                if state[0] > limit:
                    raise _Skip(self._too_long())
                yield line
            return
        readline = self.stream.readline
        while line := readline(limit + 1):
            if len(line) > limit and line[-1] not in "\r\n":
                too_long = self._too_long()
                while line and line[-1] not in "\r\n":  # the rest of it, a piece at a time
                    line = readline(1 << 16)
                raise _Skip(too_long)
            if self.undecodable and _ESCAPED.search(line):
                raise _Skip(Text(m.LINE_NOT_UTF8, line=self.line_num + 1))
            state[0] += len(line)
            if state[0] > limit:
                raise _Skip(self._too_long())
            yield line

    def _too_long(self) -> str:
        return Text(
            m.RECORD_TOO_LONG,
            line=self.line_num + 1,
            limit=self.max_chars,
            setting=limit_name("max_line_bytes"),
        )


def _has_long_line(data: bytes, limit: int) -> bool:
    """Whether ``data`` may hold a line longer than ``limit`` bytes: such a line covers
    a whole aligned window of half that size without a line end. A few find() calls per
    MiB at most."""
    half = max(limit // 2, 1)
    find = data.find
    for start in range(0, len(data) - half + 1, half):
        if find(b"\n", start, start + half) < 0 and find(b"\r", start, start + half) < 0:
            return True
    return False


__all__ = ["Records", "read_text"]
