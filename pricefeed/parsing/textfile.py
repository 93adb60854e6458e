"""The text path: csv/tsv/txt, decoded a chunk at a time, split by PlainLines where no
quote character is used and by the csv module otherwise."""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator

from .errors import (
    CorruptFile,
)
from .plainlines import PlainLines
from .rows import Sink
from .table import Table, read_table
from .text import SAMPLE, detect_delimiter, detect_encoding, guess_cyrillic
from .types import (
    Limits,
    ParsedFile,
    ParseOptions,
)


def read_text(data: bytes, options: ParseOptions, limits: Limits, sink: Sink | None) -> ParsedFile:
    encoding = detect_encoding(data)
    delimiter = detect_delimiter(
        data[:SAMPLE].decode(encoding, "replace"), complete=len(data) <= SAMPLE
    )
    if sink is not None and encoding.startswith("utf-8"):
        # Rows handed to a sink cannot be taken back: make sure the whole file is UTF-8
        # before reading it as such.
        if not _all_utf8(data):
            encoding = guess_cyrillic(data[: SAMPLE * 16])
    try:
        return _parse_stream(data, encoding, delimiter, options, limits, sink)
    except UnicodeDecodeError:
        # The first 64 KB looked like UTF-8 and a later line is not: a Cyrillic file
        # with an English head. Read it again as such.
        encoding = guess_cyrillic(data[: SAMPLE * 16])
        return _parse_stream(data, encoding, delimiter, options, limits, sink)


def _all_utf8(data: bytes) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    step = 1 << 20
    try:
        for start in range(0, len(view), step):
            decoder.decode(view[start : start + step])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _parse_stream(
    data: bytes,
    encoding: str,
    delimiter: str,
    options: ParseOptions,
    limits: Limits,
    sink: Sink | None,
) -> ParsedFile:
    # Decoded a chunk at a time: a whole-file str (and StringIO's UCS-4 copy of it)
    # would cost five times the file's size in memory.
    errors = "strict" if encoding.startswith("utf-8") else "replace"
    reader: PlainLines | Iterator[list[str]]
    if PlainLines.fits(data, encoding):
        reader = PlainLines(data, encoding, errors, delimiter)
    else:
        stream = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors=errors, newline="")
        reader = csv.reader(stream, delimiter=delimiter)
    try:
        result = read_table(Table(reader, typed=False), options, limits, "csv", sink)
    except csv.Error as exc:
        raise CorruptFile(f"malformed text table at line {reader.line_num}: {exc}") from None
    result.encoding = encoding
    result.delimiter = delimiter
    return result
