"""PlainLines: the quote-free text table, split line by line (and column by column)."""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator, Sequence
from itertools import chain, repeat


class PlainLines:
    """The rows csv.reader gives for a text table without a quote character, in half its
    time: each line split at the delimiter, a chunk of lines at a time (``rows_of``);
    or, for a chunk whose lines all have as many fields, straight its columns
    (``columns_of``), without a list per row.

    Without '"' the csv module's dialect has nothing left to interpret but line ends
    ("\\r\\n", "\\r" or "\\n"; an empty line is an empty row) and the delimiter; its
    field size limit is applied the same way, with the same error. Only for encodings
    in which a line end is the byte "\\n" and '"' the byte 0x22 (not UTF-16).
    """

    # Bytes decoded at a time, up to the next line end: below csv.field_size_limit(), so
    # that only a text holding a very long line needs its fields measured.
    STEP = 1 << 16

    def __init__(self, data: bytes, encoding: str, errors: str, delimiter: str) -> None:
        self.data = data
        self.decoder = codecs.getincrementaldecoder(encoding)(errors)
        self.delimiter = delimiter
        self.limit = csv.field_size_limit()
        self.line_num = 0  # as csv.reader's: lines read so far (for error messages)
        self.texts = self._texts()
        self.leftover: list[list[str]] = []  # rows of a text read by head() beyond it

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
        """The file decoded a chunk of whole lines at a time, each line ended by "\\n"."""
        data, step = self.data, self.STEP
        pos, size = 0, len(data)
        while pos < size:
            end = data.find(b"\n", min(pos + step, size))
            end = size if end < 0 else end + 1
            text = self.decoder.decode(data[pos:end], final=end == size)
            pos = end
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            if text and not text.endswith("\n"):
                text += "\n"  # the last line of a file that does not end one
            if text:
                yield text

    def rows_of(self, text: str) -> list[list[str]]:
        """The rows of one of ``texts``, as csv.reader gives them."""
        lines = text.split("\n")
        lines.pop()  # after the last "\\n"
        limit = self.limit
        if len(text) > limit and max(map(len, lines), default=0) > limit:
            self._check_field_sizes(lines, limit)
        delimiter = self.delimiter
        if "" in lines:
            rows = [line.split(delimiter) if line else [] for line in lines]
        else:
            rows = list(map(str.split, lines, repeat(delimiter)))
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
        if k < 2 or max(wanted) >= k:
            return None
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
                raise csv.Error(f"field larger than field limit ({limit})")
