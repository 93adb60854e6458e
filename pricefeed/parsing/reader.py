"""parse(): bytes of one price list in, typed rows out."""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import gc
import io
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from itertools import chain, islice, repeat
from operator import itemgetter
from typing import Any

from .archives import ARCHIVE_FORMATS, UNSUPPORTED_ARCHIVES, mib
from .detect import detect_format
from .errors import (
    CorruptFile,
    EmptyFile,
    FileTooLarge,
    MissingColumns,
    NoHeaderRow,
    ParseError,
    SheetNotFound,
    TooManyRows,
    UnsupportedArchive,
    UnsupportedFormat,
)
from .headers import (
    SCAN_ROWS,
    SYNONYMS,
    Header,
    combine,
    map_by_synonyms,
    norm,
)
from .numbers import (
    FLOAT_LIMIT,
    LIMIT,
    OUT_OF_RANGE,
    NumberReader,
    currency_in_text,
    float_to_decimal,
    normalise_currency,
)
from .text import SAMPLE, detect_delimiter, detect_encoding, guess_cyrillic
from .types import (
    FIELDS,
    REQUIRED_FIELDS,
    Limits,
    ParsedFile,
    ParseOptions,
    Row,
    RowBlock,
    index_to_letter,
)
from .workbook_guard import check_workbook

_FORMAT_NOTES = {
    "encrypted": "encrypted (password-protected) workbook",
    "html": "html (a web page, perhaps saved with a spreadsheet's name)",
    "xml-spreadsheet": "Excel 2003 XML spreadsheet",
    "xlsb": "xlsb (binary workbook; save it as xlsx)",
    "ods": "ods (save it as xlsx)",
    "image": "image",
}
_NUMBERISH = re.compile(r"[\s\d.,+\-\u00a0\u202f]+")
_DIGITS = frozenset("0123456789")
_SIGNED = frozenset("0123456789-")
_ABSENT = 1 << 30  # column index of a field that is not mapped: always past the row's end


Sink = Callable[[list[Row]], None]
SINK_CHUNK = 16_384  # rows handed to a sink at a time


def parse(
    data: bytes,
    options: ParseOptions | None = None,
    limits: Limits | None = None,
    *,
    sink: Sink | None = None,
) -> ParsedFile:
    """Read one price list (one Member of an attachment) into typed rows.

    Detects the format by content (xlsx/xlsm/xls through python-calamine after the
    workbook guard, csv/tsv/txt through the csv module), finds the header row within
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
    """
    options = options or ParseOptions()
    limits = limits or Limits()
    if len(data) > limits.max_file_bytes:
        raise FileTooLarge(f"file is {len(data):,} bytes, more than {mib(limits.max_file_bytes)}")
    fmt = detect_format(data)
    if fmt in ("xlsx", "xlsm"):
        check_workbook(data, limits)
        return _parse_workbook(data, fmt, options, limits, sink)
    if fmt == "xls":
        return _parse_workbook(data, fmt, options, limits, sink)
    if fmt == "csv":
        return _parse_text(data, options, limits, sink)
    if fmt == "empty":
        raise EmptyFile("the file is empty")
    if fmt in ARCHIVE_FORMATS or fmt in UNSUPPORTED_ARCHIVES:
        raise UnsupportedArchive(f"unsupported format: {fmt} archive (expand it first)")
    raise UnsupportedFormat(f"unsupported format: {_FORMAT_NOTES.get(fmt, fmt)}")


# --- workbooks ----------------------------------------------------------------------


def _calamine_failure(exc: BaseException) -> ParseError:
    name = type(exc).__name__
    if name == "PasswordError":
        return UnsupportedFormat("unsupported format: encrypted (password-protected) workbook")
    message = str(exc).splitlines()[0][:200] if str(exc) else name
    return CorruptFile(f"damaged workbook: {message}")


def _parse_workbook(
    data: bytes, fmt: str, options: ParseOptions, limits: Limits, sink: Sink | None
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
    table = _Table(rows, typed=True, col_offset=start[1], merged=merged)
    result = _read(table, options, limits, fmt, sink)
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
        raise SheetNotFound(f"sheet '{wanted}' not found; the workbook has: {listed}")
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
    raise EmptyFile("the workbook has no non-empty sheet")


def _visible(meta) -> bool:
    return str(meta.visible).endswith("Visible")


# --- text tables --------------------------------------------------------------------


def _parse_text(
    data: bytes, options: ParseOptions, limits: Limits, sink: Sink | None
) -> ParsedFile:
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
        result = _read(_Table(reader, typed=False), options, limits, "csv", sink)
    except csv.Error as exc:
        raise CorruptFile(f"malformed text table at line {reader.line_num}: {exc}") from None
    result.encoding = encoding
    result.delimiter = delimiter
    return result


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


# --- shared -------------------------------------------------------------------------


class _Table:
    """Rows from a reader: lists of str (text) or of typed cells (workbooks)."""

    def __init__(
        self,
        rows: Iterable[list],
        *,
        typed: bool,
        col_offset: int = 0,
        merged: list | None = None,
    ) -> None:
        self.source = rows
        self.rows: Iterator[list] = iter(()) if isinstance(rows, PlainLines) else iter(rows)
        self.typed = typed
        self.col_offset = col_offset
        self.merged = merged or []

    def head(self, n: int) -> list[list]:
        if isinstance(self.source, PlainLines):
            return self.source.head(n)
        return list(islice(self.rows, n))


def cell_text(value: object) -> str:
    """A cell as text: numbers without a spurious ".0", dates in ISO form."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return "" if value is None else str(value).strip()


def _head_texts(table: _Table, head: list[list]) -> list[list[str]]:
    if not table.typed:
        return [[c.strip() for c in row] for row in head]
    texts = [[cell_text(v) for v in row] for row in head]
    # Merged cells hold their value in the top-left cell only; for header detection
    # every cell of a merged range reads that value.
    off = table.col_offset
    for (r0, c0), (r1, c1) in table.merged:
        if r0 >= len(texts) or c0 - off < 0 or c0 - off >= len(texts[r0]):
            continue
        value = texts[r0][c0 - off]
        for r in range(r0, min(r1, len(texts) - 1) + 1):
            row = texts[r]
            for c in range(c0 - off, c1 - off + 1):
                while len(row) <= c:
                    row.append("")
                if not row[c]:
                    row[c] = value
    return texts


def _read(
    table: _Table, options: ParseOptions, limits: Limits, fmt: str, sink: Sink | None = None
) -> ParsedFile:
    head = table.head(SCAN_ROWS + 1)
    if not head:
        raise EmptyFile("the file holds no rows")
    texts = _head_texts(table, head)
    header = _find_header(texts, options, table.col_offset)
    num = NumberReader(options.number_format)
    cols = header.columns
    price_header = header.texts.get("price", "")
    header_currency = (
        currency_in_text(price_header)
        if price_header and "price" not in options.column_letters()
        else None
    )
    ctx = _Context(
        columns=[cols.get(f, _ABSENT) for f in FIELDS],
        header_norm=(
            (norm(header.cells[cols["sku"]]), norm(header.cells[cols["price"]]))
            if header.row >= 0 and max(cols["sku"], cols["price"]) < len(header.cells)
            else None
        ),
        currency=header_currency or options.default_currency.strip(),
        limits=limits,
        num=num,
        sink=sink,
    )
    first = header.row + 1
    if header.row < 0:  # no header: data starts at the first row with a number as price
        first = _first_priced_row(texts, cols["price"])
        ctx.skipped = first
    with _gc_paused():
        if table.typed:
            _rows_workbook(chain(head[first:], table.rows), first + 1, ctx)
        elif isinstance(table.source, PlainLines):
            _rows_plain(head[first:], table.source, first + 1, ctx)
        else:
            _rows_text(chain(head[first:], table.rows), first + 1, ctx)
    ctx.fix_ambiguous()
    ok = ctx.sent + len(ctx.rows)
    if sink is not None and ctx.rows:
        sink(ctx.rows)
        ctx.rows = []
    return ParsedFile(
        format=fmt,
        rows=ctx.rows,
        rows_ok=ok,
        errors=ctx.errors,
        rows_total=ctx.total,
        header_row=header.row + 1 if header.row >= 0 else 0,
        columns=header.texts,
        skipped_rows=ctx.skipped,
    )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a million row tuples are made: the
    rows hold no cycles, and the collector's repeated scans of the growing list cost
    a third of the CSV time. The previous state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _Context:
    """Accumulates the rows of one file."""

    def __init__(self, *, columns, header_norm, currency, limits, num, sink=None) -> None:
        self.columns = columns
        self.header_norm = header_norm
        self.currency = currency
        self.limits = limits
        self.num = num
        self.rows: list[tuple] = []
        self.errors: list[tuple[int, str]] = []
        self.total = 0
        self.skipped = 0
        self.ambiguous: list[tuple[int, object, object]] = []
        # Text tables: quantity and currency cells already read (shared by both paths).
        self.qcache: dict[str, Decimal | None] = {}
        self.qtexts: dict[str, str | None] = {}  # the same as text, for RowBlocks
        self.ccache: dict[str, str | None] = {}
        self.sink = sink
        # The text column path hands such a sink RowBlocks instead of row tuples.
        self.blocks = callable(getattr(sink, "take_block", None))
        self.sent = 0  # rows handed to the sink
        # The hot loops call flush() when the row list reaches this length.
        self.flush_at = SINK_CHUNK if sink is not None else 1 << 62

    def flush(self) -> None:
        """Hands the final rows to the sink and empties the row list (in place: the hot
        loops hold its append method)."""
        rows = self.rows
        if self.ambiguous:
            if self.num.decimal is not None:
                self.fix_ambiguous()
                self.ambiguous = []
            else:
                # Rows from the first undecided one on wait for the file to decide.
                cut = self.ambiguous[0][0]
                if cut:
                    self.sink(rows[:cut])
                    del rows[:cut]
                    self.sent += cut
                    self.ambiguous = [(i - cut, p, q) for i, p, q in self.ambiguous]
                self.flush_at = len(rows) + SINK_CHUNK
                return
        self.sink(rows)
        self.sent += len(rows)
        rows.clear()
        self.flush_at = SINK_CHUNK

    def take_columns(
        self,
        first_row: int,
        skus: Sequence[str],
        names: Sequence[str] | None,
        *,
        texts: list[str] | None = None,
        values: list[Decimal] | None = None,
        currencies: Sequence[str | None] | None,
        quantities: list | None,
    ) -> None:
        """Takes a chunk of good rows converted a column at a time (None: the column is
        absent). Prices come as decimal ``texts`` or as Decimal ``values``, whichever the
        caller has; quantities as Decimals, or as text for a block sink. A block sink gets
        them as one RowBlock, anything else as row tuples."""
        n = len(skus)
        self.total += n
        if self.blocks:
            if self.rows:
                self.flush()  # rows of the row loop first: the file's order
            self.sink.take_block(
                RowBlock(
                    first_row=first_row,
                    skus=skus,
                    names="" if names is None else names,
                    prices=texts if texts is not None else list(map(str, values or ())),
                    # Callers fill every currency they pass: no None is left.
                    currencies=self.currency if currencies is None else currencies,  # type: ignore[arg-type]
                    quantities=quantities,
                )
            )
            self.sent += n
            return
        self.rows.extend(
            zip(
                range(first_row, first_row + n),
                skus,
                repeat("") if names is None else names,
                values if values is not None else map(Decimal, texts or ()),
                repeat(self.currency) if currencies is None else currencies,
                repeat(None) if quantities is None else quantities,
                strict=False,  # repeat() stands in for absent columns
            )
        )
        if len(self.rows) >= self.flush_at:
            self.flush()

    def error(self, row_number: int, reason: str) -> None:
        if len(self.errors) < self.limits.max_errors:
            self.errors.append((row_number, reason))

    def too_many(self) -> TooManyRows:
        return TooManyRows(f"more than {self.limits.max_rows:,} data rows")

    def is_repeated_header(self, sku: str, price: str) -> bool:
        """A page header repeated inside the data (long lists printed page by page)."""
        return self.header_norm is not None and (norm(sku), norm(price)) == self.header_norm

    def fix_ambiguous(self) -> None:
        """Re-read the ambiguous numbers met before the file settled its convention."""
        num = self.num
        if not self.ambiguous or num.decimal is None:
            return
        for index, price, quantity in self.ambiguous:
            r = self.rows[index]
            new_price = num.read(price)[0] if isinstance(price, str) else r[3]
            new_qty = num.quantity(quantity) if isinstance(quantity, str) and quantity else r[5]
            self.rows[index] = (r[0], r[1], r[2], new_price, r[4], new_qty)


def _first_priced_row(texts: list[list[str]], price_col: int) -> int:
    for i, row in enumerate(texts[:SCAN_ROWS]):
        if price_col < len(row) and row[price_col]:
            try:
                NumberReader("dot").read(row[price_col])
            except ValueError:
                continue
            return i
    return 0


TEXT_CHUNK = 2048  # rows a text table is read in, column by column where possible
_SEP = "\x00"
# Prices that need no Decimal to be known good, once spaces are dropped and the decimal
# separator is a point: what str(Decimal(text)) gives back up to leading zeros. At most
# 14 digits before the point (numbers.LIMIT): longer ones are judged by the row loop.
_DECIMAL_TEXTS = re.compile(r"-?[0-9]{1,14}(?:\.[0-9]+)?(?:\x00-?[0-9]{1,14}(?:\.[0-9]+)?)*")
# Prices the row loop's fast path takes (ASCII, a digit or "-" first, a digit last),
# joined by _SEP: a whole column is checked by one match.
_PLAIN_PRICES = re.compile(r"(?:[0-9]|[-0-9][^\x00]*[0-9])(?:\x00(?:[0-9]|[-0-9][^\x00]*[0-9]))*")


def _rows_text(rows: Iterable[list[str]], row_number: int, ctx: _Context) -> None:
    """Text-table rows, TEXT_CHUNK at a time: a chunk in which every row is as wide as
    the mapped columns and has a SKU and a plain price, once the file has settled its
    decimal separator (nearly every chunk of a real price list), is converted a column
    at a time by C-level map/zip calls; any other chunk goes through the row loop. Both
    give the same rows: the column path applies the row loop's fast-path rules to every
    value and gives the chunk back to the row loop when one does not fit."""
    _in_chunks(rows, row_number, ctx, _text_columns, _text_rows)


def _in_chunks(
    rows: Iterable[list],
    row_number: int,
    ctx: _Context,
    by_columns: Callable[[list[list], int, _Context], bool],
    by_rows: Callable[[list[list], int, _Context], None],
) -> None:
    """Rows TEXT_CHUNK at a time: each chunk ``by_columns`` when it takes it (True),
    else ``by_rows``; row numbers follow the file."""
    rows = iter(rows)
    rn = row_number - 1
    while chunk := list(islice(rows, TEXT_CHUNK)):
        if not by_columns(chunk, rn, ctx):
            by_rows(chunk, rn + 1, ctx)
        rn += len(chunk)


def _rows_plain(first: list[list[str]], source: PlainLines, row_number: int, ctx: _Context) -> None:
    """A quote-free text table: the rows already read, then each further text of lines
    converted straight from its columns (PlainLines.columns_of) where every line has as
    many fields; any other text goes through _rows_text. The same rows either way."""
    rows = first + source.leftover
    source.leftover = []
    _rows_text(rows, row_number, ctx)
    rn = row_number - 1 + len(rows)
    picks = _picks(ctx)
    for text in source.texts:
        columns = source.columns_of(text, picks) if ctx.num.decimal is not None else None
        if columns is not None and _convert_text_columns(len(columns[0]), columns, rn, ctx):
            rn += len(columns[0])
            source.line_num += len(columns[0])
            continue
        rows = source.rows_of(text)
        _rows_text(rows, rn + 1, ctx)
        rn += len(rows)


def _picks(ctx: _Context) -> tuple[int, int, int, int, int]:
    """The columns of sku, price, name, currency and quantity; sku's for absent ones."""
    si, ni, pi, ci, qi = ctx.columns
    return (
        si,
        pi,
        ni if ni != _ABSENT else si,
        ci if ci != _ABSENT else si,
        qi if qi != _ABSENT else si,
    )


def _text_columns(chunk: list[list[str]], rn: int, ctx: _Context) -> bool:
    """Converts a chunk column by column; False (nothing done) when it does not fit."""
    if ctx.num.decimal is None:
        return False
    picks = _picks(ctx)
    if min(map(len, chunk)) <= max(picks):
        return False
    columns = zip(*map(itemgetter(*picks), chunk), strict=True)
    return _convert_text_columns(len(chunk), list(columns), rn, ctx)


def _convert_text_columns(n: int, columns: list, rn: int, ctx: _Context) -> bool:
    """Converts ``n`` rows given as their sku, price, name, currency and quantity
    columns (_picks); False (nothing done) when one does not fit the fast path."""
    sep = ctx.num.decimal
    if sep is None:
        return False
    _, ni, _, ci, qi = ctx.columns
    has_name, has_currency, has_qty = ni != _ABSENT, ci != _ABSENT, qi != _ABSENT
    skus, prices, names, currencies, quantities = columns
    skus = list(map(str.strip, skus))
    prices = list(map(str.strip, prices))
    if not all(skus) or not all(prices):
        return False
    original = _SEP.join(prices)
    other = "." if sep == "," else ","
    if not original.isascii() or other in original or original.count(_SEP) != n - 1:
        return False
    joined = original.replace(" ", "")
    if sep == ",":
        joined = joined.replace(",", ".")
    blocks = ctx.blocks
    values: list[Decimal] | None = None
    if not (blocks and _DECIMAL_TEXTS.fullmatch(joined)):
        # Plain decimal text is exactly what the fast path gives Decimal without error:
        # a block sink takes it as it is. Anything else is tried as the row loop would.
        if not _PLAIN_PRICES.fullmatch(original):
            return False
        try:
            values = list(map(Decimal, joined.split(_SEP)))
        except InvalidOperation:
            return False
        if not -LIMIT < min(values) <= max(values) < LIMIT:
            return False
    if ctx.total + n > ctx.limits.max_rows:
        return False  # the row loop raises at the row that is one too many
    if has_qty:
        qcache = ctx.qcache
        qs = list(map(str.strip, quantities))
        # Set arithmetic finds the cells not read yet ("x in list" would compare
        # Decimals with a sentinel, through numbers.Rational's slow isinstance).
        cache = ctx.qtexts if blocks else qcache
        missing = set(qs).difference(cache)
        lookup: dict = cache
        if missing:
            quantity = ctx.num.quantity
            lookup = dict(cache)
            for q in missing:
                qty = quantity(q) if q else None
                lookup[q] = qty if not blocks else None if qty is None else str(qty)
                if "," not in q and "." not in q and len(cache) < 4096:
                    cache[q] = lookup[q]
        qtys: list | None = list(map(lookup.__getitem__, qs))
    else:
        qtys = None
    curs: list[str | None] | None = None
    if has_currency:
        ccache = ctx.ccache
        curs = list(map(ccache.get, currencies, repeat(None)))
        if None in curs:
            default = ctx.currency
            for i, c in enumerate(currencies):
                if curs[i] is None:
                    curs[i] = cur = (normalise_currency(c) or default) if c else default
                    if len(ccache) < 1024:
                        ccache[c] = cur
    ctx.take_columns(
        rn + 1,
        skus,
        list(map(str.strip, names)) if has_name else None,
        texts=joined.split(_SEP) if values is None else None,
        values=values,
        currencies=curs,
        quantities=qtys,
    )
    return True


def _text_rows(rows: Iterable[list[str]], row_number: int, ctx: _Context) -> None:
    """The row loop for text tables: every cell is a str. Rows as wide as the mapped
    columns (nearly all) take one itemgetter call; absent fields read column sku and
    are blanked."""
    _, ni, _, ci, qi = ctx.columns
    has_name, has_currency, has_qty = ni != _ABSENT, ci != _ABSENT, qi != _ABSENT
    picks = _picks(ctx)
    pick = itemgetter(*picks)
    width = max(picks) + 1
    out = ctx.rows
    append = out.append
    num = ctx.num
    read = num.read
    quantity = num.quantity
    default_currency = ctx.currency
    max_rows = ctx.limits.max_rows
    qcache = ctx.qcache
    ccache = ctx.ccache
    sep = num.decimal
    other = "." if sep == "," else ","
    digits, signed, decimal, invalid = _DIGITS, _SIGNED, Decimal, InvalidOperation
    rn = row_number - 1
    total = ctx.total
    for row in rows:
        rn += 1
        if len(row) >= width:
            sku, p, name, c, q = pick(row)
        else:
            sku, p, name, c, q = (row[i] if i < len(row) else "" for i in picks)
        sku = sku.strip()
        p = p.strip()
        if not p or not sku:
            outcome = _incomplete_row(row, sku, p, ctx)
            if outcome is None:
                ctx.skipped += 1
            else:
                total += 1
                if total > max_rows:
                    raise ctx.too_many()
                ctx.error(rn, outcome)
            continue
        total += 1
        if total > max_rows:
            raise ctx.too_many()
        # NumberReader.read's own fast path, inlined: this line runs a million times.
        price = None
        if sep and p.isascii() and other not in p and p[-1] in digits and p[0] in signed:
            try:
                price = decimal(
                    p.replace(" ", "").replace(",", ".") if sep == "," else p.replace(" ", "")
                )
                currency = None
            except invalid:
                price = None
        if price is None:
            try:
                price, currency = read(p)
            except ValueError:
                if ctx.is_repeated_header(sku, p):
                    total -= 1
                    ctx.skipped += 1
                else:
                    ctx.error(rn, f"price {p!r} is not a number")
                continue
            sep = num.decimal
            other = "." if sep == "," else ","
        if not -LIMIT < price < LIMIT:
            ctx.error(rn, f"price {p!r} {OUT_OF_RANGE}")
            continue
        if has_qty:
            q = q.strip()
            if q:
                qty = qcache.get(q, False)
                if qty is False:
                    qty = quantity(q)
                    if "," not in q and "." not in q and len(qcache) < 4096:
                        qcache[q] = qty
            else:
                qty = None
        else:
            q = qty = None
        if currency is None:
            if has_currency and c:
                currency = ccache.get(c)
                if currency is None:
                    currency = normalise_currency(c) or default_currency
                    if len(ccache) < 1024:
                        ccache[c] = currency
            else:
                currency = default_currency
        if num.pending:
            ctx.ambiguous.append((len(out), p, q))
            num.pending = False
        append((rn, sku, name.strip() if has_name else "", price, currency, qty))
        if len(out) >= ctx.flush_at:
            ctx.flush()
    ctx.total = total


def _incomplete_row(row: list, sku: str, price: str, ctx: _Context) -> str | None:
    """Why a row missing its sku or price is an error, or None when it is an empty,
    section-title or repeated-header row (skipped)."""
    if not price:
        if not sku:
            return None
        # A section title such as "Кабели и провода" often sits in the sku column, alone
        # on its row; a lone code with digits ("A-17") is an item without a price.
        non_empty = sum(1 for c in row if (c.strip() if isinstance(c, str) else c != ""))
        if non_empty <= 1 and not any(ch.isdigit() for ch in sku):
            return None
        return "price is missing"
    try:
        NumberReader("dot").read(price)
    except ValueError:
        return None  # no sku and no number: a note or sub-heading
    return "sku is missing"


def _rows_workbook(rows: Iterable[list], row_number: int, ctx: _Context) -> None:
    """Workbook rows, TEXT_CHUNK at a time: a chunk whose every row has a SKU and a
    numeric price, text or empty names and currencies, numeric or empty quantities
    (nearly every chunk of a real price list) is converted a column at a time; any
    other chunk goes through the row loop. Both give the same rows."""
    _in_chunks(rows, row_number, ctx, _typed_columns, _rows_typed)


_NUMBERS = {float, int}  # exact types: a bool is not a price
_NUMBERS_OR_TEXT = {float, int, str}


def _typed_columns(chunk: list[list], rn: int, ctx: _Context) -> bool:
    """Converts a workbook chunk column by column, exactly as _rows_typed would; False
    (nothing done) when the chunk holds anything the row loop must judge."""
    _, ni, _, ci, qi = ctx.columns
    has_name, has_currency, has_qty = ni != _ABSENT, ci != _ABSENT, qi != _ABSENT
    picks = _picks(ctx)
    if min(map(len, chunk)) <= max(picks):
        return False
    blocks = ctx.blocks
    if blocks and ctx.ambiguous and ctx.num.decimal is None:
        return False  # rows held back for an undecided separator must go first
    n = len(chunk)
    skus: Sequence[Any]
    prices: Sequence[Any]
    skus, prices, names, currencies, quantities = zip(*map(itemgetter(*picks), chunk), strict=True)
    if not set(map(type, prices)) <= _NUMBERS or not all(map(math.isfinite, prices)):
        return False
    if not -FLOAT_LIMIT < min(prices) <= max(prices) < FLOAT_LIMIT:
        return False
    if set(map(type, skus)) == {str}:
        skus = list(map(str.strip, skus))
    else:
        skus = [v.strip() if type(v) is str else cell_text(v) for v in skus]
    if not all(skus):
        return False
    if has_currency and set(map(type, currencies)) != {str}:
        return False
    if has_qty:
        kinds = set(map(type, quantities))
        if not kinds <= _NUMBERS_OR_TEXT:
            return False
        if str in kinds and any(q.strip() for q in quantities if type(q) is str):
            return False  # quantity text is read by the number reader, row by row
    if ctx.total + n > ctx.limits.max_rows:
        return False  # the row loop raises at the row that is one too many
    if blocks:
        # For COPY: repr is the shortest text that reads back as the same number, the
        # row loop's value, though spelt "12345.0" or "1e-05"; a third of the time.
        texts = list(map(repr, prices))
    else:
        # The row loop's price: Decimal(int(p)) for whole numbers, else Decimal(repr(p)).
        texts = [str(int(p)) if type(p) is int or p.is_integer() else repr(p) for p in prices]
    if has_qty:
        lookup: dict = {}
        for q in set(quantities):
            qty = None if type(q) is str else _typed_quantity(q)
            lookup[q] = qty if not blocks or qty is None else str(qty)
        qtys: list | None = list(map(lookup.__getitem__, quantities))
    else:
        qtys = None
    curs: list[str | None] | None = None
    if has_currency:
        default = ctx.currency
        found = {
            c: normalise_currency(text) if (text := c.strip()) else default for c in set(currencies)
        }
        curs = list(map(found.__getitem__, currencies))
    name_list: list[str] | None = None
    if has_name:
        if set(map(type, names)) == {str}:
            name_list = list(map(str.strip, names))
        else:
            name_list = [v.strip() if type(v) is str else cell_text(v) for v in names]
    ctx.take_columns(rn + 1, skus, name_list, texts=texts, currencies=curs, quantities=qtys)
    return True


def _typed_quantity(q: float | int) -> Decimal | None:
    """A workbook's numeric quantity cell; None when out of range (numbers.LIMIT)."""
    if not -FLOAT_LIMIT < q < FLOAT_LIMIT:
        return None
    return float_to_decimal(q) if type(q) is float else Decimal(q)


def _rows_typed(rows: Iterable[list], row_number: int, ctx: _Context) -> None:
    """The loop for workbooks: cells are str, float, int, bool, date/time or ""."""
    si, ni, pi, ci, qi = ctx.columns
    out = ctx.rows
    append = out.append
    num = ctx.num
    read = num.read
    default_currency = ctx.currency
    max_rows = ctx.limits.max_rows
    qcache: dict[float, Decimal | None] = {}
    ccache: dict[object, str] = {}
    raw: Any  # a workbook cell: str, float, int, bool, date/time or ""
    q: Any
    rn = row_number - 1
    total = ctx.total
    for row in rows:
        rn += 1
        n = len(row)
        v = row[si] if si < n else ""
        sku = v.strip() if type(v) is str else cell_text(v)
        raw = row[pi] if pi < n else ""
        t = type(raw)
        p_text = raw.strip() if t is str else "x"
        if not sku or not p_text:
            texts = [cell_text(c) for c in row]
            outcome = _incomplete_row(texts, sku, cell_text(raw), ctx)
            if outcome is None:
                ctx.skipped += 1
            else:
                total += 1
                if total > max_rows:
                    raise ctx.too_many()
                ctx.error(rn, outcome)
            continue
        total += 1
        if total > max_rows:
            raise ctx.too_many()
        currency = None
        if t is float:
            # repr is the shortest text that round-trips: 10.1 stays 10.1.
            price = Decimal(int(raw)) if raw.is_integer() else Decimal(repr(raw))
        elif t is int:
            price = Decimal(raw)
        elif t is str:
            try:
                price, currency = read(p_text)
            except ValueError:
                if ctx.is_repeated_header(sku, p_text):
                    total -= 1
                    ctx.skipped += 1
                else:
                    ctx.error(rn, f"price {p_text!r} is not a number")
                continue
        else:
            ctx.error(rn, f"price {cell_text(raw)!r} is not a number")
            continue
        if not -LIMIT < price < LIMIT:
            ctx.error(rn, f"price {cell_text(raw)!r} {OUT_OF_RANGE}")
            continue
        q = row[qi] if qi < n else ""
        qt = type(q)
        if qt is float:
            qty = qcache.get(q, False)
            if qty is False:
                qty = _typed_quantity(q)
                if len(qcache) < 4096:
                    qcache[q] = qty
        elif qt is int:
            qty = _typed_quantity(q)
        elif qt is str and q.strip():
            qty = num.quantity(q.strip())
        else:
            qty = None
        if currency is None:
            c = row[ci] if ci < n else ""
            currency = ccache.get(c)
            if currency is None:
                text = c.strip() if type(c) is str else cell_text(c)
                currency = normalise_currency(text) if text else default_currency
                if len(ccache) < 1024:
                    ccache[c] = currency
        if num.pending:
            ctx.ambiguous.append(
                (len(out), p_text if t is str else None, q.strip() if type(q) is str else None)
            )
            num.pending = False
        v = row[ni] if ni < n else ""
        append((rn, sku, v.strip() if type(v) is str else cell_text(v), price, currency, qty))
        if len(out) >= ctx.flush_at:
            ctx.flush()
    ctx.total = total


# --- header -------------------------------------------------------------------------


def _find_header(texts: list[list[str]], options: ParseOptions, col_offset: int) -> Header:
    configured = {f: norm(t) for f, t in options.column_texts().items()}
    letters = {f: i - col_offset for f, i in options.column_letters().items()}
    width = max((len(r) for r in texts), default=0)
    for f, c in letters.items():
        if c >= width:
            last_letter = index_to_letter(col_offset + width - 1) if width else "A"
            raise MissingColumns(
                f"column {options.columns[f].strip().upper()} for {f} is past the last "
                f"column of the table ({last_letter})"
            )
    best: tuple[int, Header] | None = None
    limit = min(SCAN_ROWS, len(texts))
    for i in range(limit):
        candidates = [(i, texts[i])]
        # A two-line header ("Цены" over "Опт | Розница") has a top line of several
        # cells; a one-cell title directly above the header is not part of it.
        if (
            i + 1 < len(texts)
            and _header_like(texts[i + 1])
            and sum(1 for cell in texts[i] if cell) >= 2
        ):
            candidates.append((i + 1, combine(texts[i], texts[i + 1])))
        for last, cells in candidates:
            normed = [norm(c) for c in cells]
            columns: dict[str, int] = {}
            for f, want in configured.items():
                if want in normed:
                    columns[f] = normed.index(want)
            found_configured = len(columns)
            columns.update(letters)
            synonyms = map_by_synonyms(normed, columns)
            columns.update(synonyms)
            header = Header(last, columns, {}, cells)
            if configured:
                ok = found_configured == len(configured)
            else:
                named = {f for f in synonyms} | {
                    f for f, c in letters.items() if 0 <= c < len(normed) and _texty(normed[c])
                }
                ok = bool(named & {"sku", "name"}) and "price" in named
            if ok:
                return _finish_header(header, options, letters)
            weight = found_configured * 10 + len(synonyms)
            if (found_configured or len(synonyms) >= 2) and (best is None or weight > best[0]):
                best = (weight, header)
    if all(f in letters for f in REQUIRED_FIELDS):
        header = Header(-1, dict(letters), {}, [])
        return _finish_header(header, options, letters)
    if best is not None:
        _raise_missing(best[1], options, letters)
    if configured:
        wanted = ", ".join(f"'{t}'" for t in options.column_texts().values())
        raise NoHeaderRow(f"no header row in the first {SCAN_ROWS} rows has {wanted}")
    raise NoHeaderRow(
        f"no header row in the first {SCAN_ROWS} rows: expected one naming the article "
        f"(e.g. Артикул, Код, SKU) or the name (Наименование, Name) and the price "
        f"(Цена, Price)"
    )


def _header_like(row: list[str]) -> bool:
    """A line that can continue a header: some text, no numbers."""
    return any(row) and not any(c and _NUMBERISH.fullmatch(c) for c in row)


def _texty(cell: str) -> bool:
    return bool(cell) and not _NUMBERISH.fullmatch(cell)


def _finish_header(header: Header, options: ParseOptions, letters: dict[str, int]) -> Header:
    missing = [f for f in REQUIRED_FIELDS if f not in header.columns]
    if missing:
        _raise_missing(header, options, letters)
    texts = {}
    for f in FIELDS:
        if f not in header.columns:
            continue
        if f in letters:
            texts[f] = options.columns[f].strip().upper()
        else:
            texts[f] = header.cells[header.columns[f]].strip()
    # Columns left of the used range (letters before the sheet's first column) are
    # empty: point them past every row.
    header.columns = {f: (c if c >= 0 else _ABSENT) for f, c in header.columns.items()}
    header.texts = texts
    return header


def _raise_missing(header: Header, options: ParseOptions, letters: dict[str, int]) -> None:
    configured = options.column_texts()
    normed = [norm(c) for c in header.cells]
    missing = []
    for f, text in configured.items():
        if norm(text) not in normed:
            missing.append(f"{f} ('{text}')")
    for f in REQUIRED_FIELDS:
        if f not in header.columns and f not in configured:
            examples = ", ".join(SYNONYMS[f][:4])
            missing.append(f"{f} (e.g. {examples})")
    seen = [c for c in header.cells if c][:20]
    cells = ", ".join(f"'{c}'" for c in seen) or "none"
    raise MissingColumns(
        f"missing columns: {'; '.join(missing)}. Header row {header.row + 1} has: {cells}"
    )
