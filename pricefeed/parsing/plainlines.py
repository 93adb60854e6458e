"""PlainLines: the quote-free text table, split line by line (and column by column)."""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator, Sequence
from itertools import chain, repeat

from core.storedtext import Text

from . import messages as m
from .archives import mib
from .types import ColumnCuts, Limits, limit_name

_DEFAULTS = Limits()


class PlainLines:
    """The rows csv.reader gives for a text table without a quote character, in half its
    time: each line split at the delimiter, a chunk of lines at a time (``rows_of``);
    or, for a chunk whose lines all have as many fields, straight its columns
    (``columns_of``), without a list per row.

    Without '"' the csv module's dialect has nothing left to interpret but line ends
    ("\\r\\n", "\\r" or "\\n"; an empty line is an empty row) and the delimiter; its
    field size limit is applied the same way, with the same error. Only for encodings
    in which a line end is the byte "\\n" and '"' the byte 0x22 (not UTF-16).

    Bounded on hostile lines: a row keeps at most ``max_columns`` cells (the rest are
    never split off; ``cuts`` counts such rows), and a line longer than
    ``max_line_bytes`` is never decoded. Such a line, and with ``errors="strict"`` a line
    that does not decode, reads as an empty row and is noted in ``marked`` (0-based row
    index -> reason), for the table to report.
    """

    # Bytes decoded at a time, up to the next line end: below csv.field_size_limit(), so
    # that only a text holding a very long line needs its fields measured.
    STEP = 1 << 16

    def __init__(
        self,
        data: bytes,
        encoding: str,
        errors: str,
        delimiter: str,
        *,
        max_columns: int = _DEFAULTS.max_columns,
        max_line_bytes: int = _DEFAULTS.max_line_bytes,
    ) -> None:
        self.data = data
        self.encoding = encoding
        self.errors = errors
        self.decoder = codecs.getincrementaldecoder(encoding)(errors)
        self.delimiter = delimiter
        self.limit = csv.field_size_limit()
        self.width = max_columns
        self.max_line_bytes = max_line_bytes
        self.line_num = 0  # as csv.reader's: lines read so far (for error messages)
        self.texts = self._texts()
        self.leftover: list[list[str]] = []  # rows of a text read by head() beyond it
        self.marked: dict[int, str] = {}
        self.cuts = ColumnCuts()

    @staticmethod
    def fits(data: bytes, encoding: str) -> bool:
        return not encoding.startswith("utf-16") and b'"' not in data

    def head(self, n: int) -> list[list[str]]:
        """The first ``n`` rows; the rest of their text's rows are kept in ``leftover``
        for whoever reads on (iter(), or ``leftover`` then ``texts``)."""
        rows: list[list[str]] = []
        while len(rows) < n and (text := next(self.texts, None)) is not None:
            rows.extend(self.rows_of(text))
        self.leftover = rows[n:]
        return rows[:n]

    def __iter__(self) -> Iterator[list[str]]:
        # The rows of each text are chained at C level: no generator step per row.
        leftover, self.leftover = self.leftover, []
        return chain(leftover, chain.from_iterable(map(self.rows_of, self.texts)))

    def _texts(self) -> Iterator[str]:
        """The file decoded a chunk of whole lines at a time, each line ended by "\\n".

        A chunk longer than ``max_line_bytes`` (a long line, or a file whose lines end
        in "\\r" alone) and, with strict errors, a chunk that does not decode, are
        decoded line by line instead (``_one_by_one``)."""
        data, step = self.data, self.STEP
        pos, size = 0, len(data)
        strict = self.errors == "strict"
        while pos < size:
            end = data.find(b"\n", min(pos + step, size))
            end = size if end < 0 else end + 1
            final = end == size
            if end - pos > self.max_line_bytes:
                text = self._one_by_one(data[pos:end], pos)
            elif strict:
                try:
                    text = self.decoder.decode(data[pos:end], final=final)
                except UnicodeDecodeError:
                    self.decoder.reset()
                    text = self._one_by_one(data[pos:end], pos)
            else:
                text = self.decoder.decode(data[pos:end], final=final)
            pos = end
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            if text and not text.endswith("\n"):
                text += "\n"  # the last line of a file that does not end one
            if text:
                yield text

    def _one_by_one(self, piece: bytes, pos: int) -> str:
        """The text of ``piece`` (whole lines) decoded line by line: a line longer than
        max_line_bytes, or one that does not decode, is an empty line, noted in
        ``marked``. Called when the rows of the texts before are all counted, so
        ``line_num`` is the index of the piece's first row."""
        encoding = self.encoding
        if encoding == "utf-8-sig":
            if pos == 0 and piece.startswith(codecs.BOM_UTF8):
                piece = piece[len(codecs.BOM_UTF8) :]
            encoding = "utf-8"
            # The incremental decoder would take a BOM at the next piece's start for the
            # file's own: past the start, the file is plain UTF-8.
            self.decoder = codecs.getincrementaldecoder(encoding)(self.errors)
        lines = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        limit = self.max_line_bytes
        first = self.line_num
        out = []
        for i, line in enumerate(lines):
            if len(line) > limit:
                self.marked[first + i] = Text(
                    m.LINE_TOO_LONG,
                    line=first + i + 1,
                    size=len(line),
                    limit=mib(limit),
                    setting=limit_name("max_line_bytes"),
                )
                out.append("")
                continue
            try:
                out.append(line.decode(encoding, self.errors))
            except UnicodeDecodeError:
                self.marked[first + i] = Text(m.LINE_NOT_UTF8, line=first + i + 1)
                out.append("")
        return "\n".join(out) + "\n" if out else ""

    def rows_of(self, text: str) -> list[list[str]]:
        """The rows of one of ``texts``, as csv.reader gives them, each cut to
        ``max_columns`` cells (str.split stops there: a line of a million delimiters
        never becomes a million strings)."""
        lines = text.split("\n")
        lines.pop()  # after the last "\\n"
        limit = self.limit
        if len(text) > limit and max(map(len, lines), default=0) > limit:
            self._check_field_sizes(lines, limit)
        delimiter = self.delimiter
        width = self.width
        if "" in lines:
            rows = [line.split(delimiter, width) if line else [] for line in lines]
        else:
            rows = list(map(str.split, lines, repeat(delimiter), repeat(width)))
        if rows and max(map(len, rows)) > width:
            first = self.line_num + 1
            for i, row in enumerate(rows):
                if len(row) > width:
                    del row[width:]
                    self.cuts.note(first + i)
        self.line_num += len(rows)
        return rows

    def columns_of(self, text: str, wanted: Sequence[int]) -> list[list[str]] | None:
        """Columns ``wanted`` of one of ``texts``, without a list per row, when every
        line of it has as many fields as its first; else None.

        Split at the delimiter alone, the text's parts hold the line ends inside them:
        "last field\\nfirst field of the next line". With k fields on every line,
        exactly every (k-1)th part holds one, and the line ends count one per part
        checked: then no line is shorter or longer, and each column is a slice.
        """
        delimiter = self.delimiter
        lines = text.count("\n")
        k = text.count(delimiter, 0, text.find("\n")) + 1
        if k < 2 or max(wanted) >= k or k > self.width:
            return None  # rows_of() cuts wider rows, with a note
        parts = text.split(delimiter)
        step = k - 1
        joined = parts[step::step]
        if len(parts) != lines * step + 1 or len(joined) != lines:
            return None
        if not all(map(str.__contains__, joined, repeat("\n"))):
            return None
        if len(text) > self.limit and max(map(len, parts)) > self.limit:
            return None  # rows_of() tells a field too long from a long line
        ends = "\n".join(joined).split("\n")  # last, first, last, first, ..., last, ""
        out = []
        for j in wanted:
            if j == 0:
                out.append([parts[0], *ends[1:-1:2]])
            elif j == step:
                out.append(ends[0:-1:2])
            else:
                out.append(parts[j::step])
        return out

    def _check_field_sizes(self, lines: list[str], limit: int) -> None:
        for i, line in enumerate(lines):
            if len(line) > limit and max(map(len, line.split(self.delimiter))) > limit:
                self.line_num += i + 1
                raise csv.Error(Text(m.CSV_FIELD_TOO_LARGE, limit=str(limit)))  # as csv says it
