"""Value objects of the parsing library: limits, options, members and results."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal

from core.storedtext import Text

from . import messages as m

FIELDS = ("sku", "name", "price", "currency", "quantity")
# Columns a config may map besides FIELDS (headers.SYNONYMS knows their names): what
# rows carry in ExtraColumns.
EXTRA_FIELDS = ("article", "brand", "barcode", "unit", "pack", "min_order")
ALL_FIELDS = FIELDS + EXTRA_FIELDS
# The values ExtraColumns holds, by the PriceItem column each is stored in.
EXTRA_VALUES = (
    "brand",
    "article",
    "barcodes",
    "barcodes_invalid",
    "unit",
    "pack",
    "min_order",
    "category",
    "stock_text",
    "stock_kind",
    "prices",
    "stocks",
)
TEXT_MAX_LENGTH = 255  # brand, article, stock text: varchar(255), cut to it
# Other prices and warehouses a row may have: each is a JSON value in every row, and a
# header of a thousand stock columns must not make every row a thousand-entry object.
MAX_PRICE_TYPES = 32
MAX_WAREHOUSES = 32
UNIT_MAX_LENGTH = 50
REQUIRED_FIELDS = ("sku", "price")
NUMBER_FORMATS = ("auto", "comma", "dot")

# 1-2 ASCII letters are a column letter (A..ZZ, 702 columns), unless the header row has
# that text ("ID", "No"): then they name that header (table.find_header); anything longer
# is header text, so a header literally called "SKU" or "Qty" is not mistaken for column
# SKU.
_COLUMN_LETTER = re.compile(r"[A-Za-z]{1,2}")

# A row as parse() returns it: (row_number, sku, name, price, currency, quantity).
Row = tuple[int, str, str, Decimal | None, str, Decimal | None]

# What the table the rows are stored in takes (pricefeed.models.PriceItem; a test keeps
# these equal to the model's fields). A value that does not fit makes its row a row
# error: one bad value never fails a whole file at the database.
SKU_MAX_LENGTH = 255
CURRENCY_MAX_LENGTH = 10
NAME_MAX_LENGTH = None  # a text column: any length (but, like every text, no NUL)
NUMBER_MAX_DIGITS = 18  # price and quantity: numeric(18, 4)
NUMBER_DECIMAL_PLACES = 4

# Cells any workbook may span, however small its file (Limits.for_file): 8 MiB in
# calamine's grid, ~0.1 s of CPU to read through.
SMALL_FILE_CELLS = 262_144

# The settings pricefeed builds Limits from: PRICEFEED_PARSE_<FIELD>.
SETTING_PREFIX = "PRICEFEED_PARSE_"


# A warning with a count (translated with ngettext where it is shown: pricefeed.texts).
CELLS_CUT = (
    "%(rows)s row(s) have cells past column %(width)s (%(setting)s); those cells were not "
    "read (first: row %(first)s)"
)


def limit_name(field: str) -> str:
    """A limit as an operator finds it: "max_cells, setting PRICEFEED_PARSE_MAX_CELLS"."""
    return Text(m.LIMIT_SETTING, field=field, setting=SETTING_PREFIX + field.upper())


@dataclass(frozen=True)
class Limits:
    """Caps on untrusted input; every one is enforced on bytes actually inflated.

    ``max_file_bytes``     one attachment, or one file inflated out of an archive;
    ``max_total_inflated`` all bytes inflated from one attachment, nested archives and the
                           XML parts of an xlsx included;
    ``max_entries``        archive entries, summed over nested archives;
    ``max_depth``          archive levels: the attachment's own archive is level 1;
    ``max_ratio``          inflated/compressed size of one member (checked once the member
                           has inflated past 1 MiB: tiny files of blanks compress very well);
    ``max_rows``           data rows in one sheet or CSV;
    ``max_cells``          cells a workbook sheet may span (calamine holds the whole span
                           in memory, 32 bytes per cell: 32M cells is about 1 GiB); for an
                           xls, the cells all its sheets span, plus a copy of the widest
                           (calamine reads every sheet at once: xls_guard);
    ``max_cells_per_byte`` a small workbook spans at most this many cells per byte of its
                           file (and at least SMALL_FILE_CELLS, whatever its size):
                           a 1.5 KB xlsx with one cell at AE999990 spans 31 M cells and
                           cost 11 s of CPU and 1 GB; a price list spans under one
                           cell per byte (100k x 8 cells in a 4.8 MB xlsx);
    ``max_text_bytes``     bytes the text of a workbook's cells expands to in the reader
                           (calamine gives every cell that refers to a shared string its
                           own copy of it: one 32 KB string in 150,000 cells is 4.9 GB);
    ``max_errors``         row errors kept in ParsedFile.errors (all are counted);
    ``max_columns``        cells of a row that are read: the header is searched and rows
                           are converted within the first ``max_columns`` columns; cells
                           past them are cut, with a warning;
    ``max_line_bytes``     one line of a text table: a longer line is not read (it is a
                           row error; a file whose header cannot be found with such a line
                           above it is refused, LineTooLong); in a table with quoted fields
                           the bound is on one record, measured in characters;
    ``max_seconds``        wall-clock time parse() may take (checked every few thousand
                           rows and header candidates; the spreadsheet reader's own opening
                           of a workbook cannot be interrupted): ParseTimeLimit.

    pricefeed builds them from the settings ``PRICEFEED_PARSE_<FIELD>``
    (pricefeed.limits); limit_name() names both in a message.
    """

    max_file_bytes: int = 50 * 2**20
    max_total_inflated: int = 200 * 2**20
    max_entries: int = 1000
    max_depth: int = 3
    max_ratio: int = 200
    max_rows: int = 2_000_000
    max_cells: int = 32_000_000
    max_cells_per_byte: int = 64
    max_text_bytes: int = 512 * 2**20
    max_errors: int = 10_000
    max_columns: int = 1024
    max_line_bytes: int = 2**20
    max_seconds: int = 180

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{f.name} must be a positive integer, not {value!r}")

    def for_file(self, size: int) -> Limits:
        """These limits for a workbook of ``size`` bytes: ``max_cells`` lowered to
        ``max_cells_per_byte`` per byte (never below SMALL_FILE_CELLS)."""
        cells = max(SMALL_FILE_CELLS, self.max_cells_per_byte * size)
        return self if cells >= self.max_cells else replace(self, max_cells=cells)


@dataclass(frozen=True)
class ParseOptions:
    """How to read one supplier's file.

    ``columns``: field -> header text (matched case-, space- and punctuation-insensitively)
    or column letter ("C", "AA": one or two Latin letters; when the header row has a cell
    of that text, such as "ID", the header wins, with a warning if it is elsewhere).
    Fields not given are found by header synonyms. ``sheet``: sheet name or 1-based
    number; "" takes the first visible non-empty sheet. ``number_format``: "auto",
    "comma" (1 234,50) or "dot" (1,234.50); it only settles ambiguous numbers such as
    "1,234" (see numbers.NumberReader).
    """

    columns: dict[str, str] = field(default_factory=dict)
    # Price columns besides the main one: price type code -> header text or letter,
    # and the currency of each (code -> "USD"; none: the row's).
    prices: dict[str, str] = field(default_factory=dict)
    price_currencies: dict[str, str] = field(default_factory=dict)
    # Stock columns per warehouse: warehouse name -> header text or letter.
    stocks: dict[str, str] = field(default_factory=dict)
    sheet: str = ""
    number_format: str = "auto"
    default_currency: str = ""
    # False: a price of zero or below is a row error (PRICE_NOT_POSITIVE).
    allow_nonpositive: bool = True

    def __post_init__(self) -> None:
        unknown = sorted(set(self.columns) - set(ALL_FIELDS))
        if unknown:
            raise ValueError(
                f"unknown column field(s) {', '.join(unknown)}; known: {', '.join(ALL_FIELDS)}"
            )
        if len(self.prices) > MAX_PRICE_TYPES or len(self.stocks) > MAX_WAREHOUSES:
            raise ValueError(
                f"at most {MAX_PRICE_TYPES} price columns and {MAX_WAREHOUSES} warehouses"
            )
        for name, value in (*self.columns.items(), *self.prices.items(), *self.stocks.items()):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"column for {name} must be a header text or a letter")
        if self.number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"number_format must be one of {', '.join(NUMBER_FORMATS)}, "
                f"not {self.number_format!r}"
            )

    def column_letters(self) -> dict[str, int]:
        """Fields given as column letters -> 0-based column index (a header of that text
        wins over the letter: table.find_header)."""
        out = {}
        for name, value in self.columns.items():
            v = value.strip()
            if _COLUMN_LETTER.fullmatch(v):
                out[name] = letter_to_index(v)
        return out

    def column_texts(self) -> dict[str, str]:
        """Fields given as header text -> that text."""
        letters = self.column_letters()
        return {k: v.strip() for k, v in self.columns.items() if k not in letters}


def is_column_letter(value: str) -> bool:
    return bool(_COLUMN_LETTER.fullmatch(value.strip()))


def letter_to_index(letter: str) -> int:
    n = 0
    for ch in letter.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def index_to_letter(index: int) -> str:
    s = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        s = chr(65 + rem) + s
    return s


@dataclass(frozen=True)
class Member:
    """One file out of an attachment; ``path`` is "" for the attachment itself, else the
    sanitised path inside the archive ("dir/file.csv", nested: "inner.zip/file.csv")."""

    path: str
    data: bytes

    def __repr__(self) -> str:  # the bytes can be megabytes: keep reprs readable
        return f"Member(path={self.path!r}, size={len(self.data)})"


@dataclass
class RowBlock:
    """Consecutive good rows of a text table, one list per field: what parse() hands to a
    sink that has a ``take_block`` method, instead of row tuples.

    Rows are numbered ``first_row``, ``first_row + 1``, ... A str in place of a list
    is that value for every row. ``prices`` and ``quantities`` are decimal text that
    Decimal() reads as the row tuples' values ("-1234.50", "7", rarely "1E+5"); a None
    quantity is an empty or unreadable cell; ``quantities`` is None when the file has
    no quantity column.
    """

    first_row: int
    skus: Sequence[str]
    names: Sequence[str] | str
    prices: Sequence[str]
    currencies: Sequence[str] | str
    quantities: list[str | None] | None

    def __len__(self) -> int:
        return len(self.skus)

    def rows(self) -> list[Row]:
        """The same rows as tuples, as parse() gives them without a block sink."""
        n = len(self.skus)
        names = [self.names] * n if isinstance(self.names, str) else self.names
        currencies = [self.currencies] * n if isinstance(self.currencies, str) else self.currencies
        quantities = self.quantities or [None] * n
        return [
            (rn, sku, name, Decimal(price), currency, None if q is None else Decimal(q))
            for rn, sku, name, price, currency, q in zip(
                range(self.first_row, self.first_row + n),
                self.skus,
                names,
                self.prices,
                currencies,
                quantities,
                strict=True,
            )
        ]


@dataclass
class ExtraColumns:
    """The values beyond FIELDS of ``count`` consecutive table rows from ``first_row``
    (a chunk as read: rows that turn out to be errors or headings have values too,
    never used). ``values``: an EXTRA_VALUES name -> one value per row, only for the
    values the file has: str for brand, article, unit, category, stock_text and
    stock_kind (values.STOCK_KINDS or ""); lists of str for barcodes (valid, digits:
    values.normalise_barcode) and barcodes_invalid; Decimal or None for pack and
    min_order; a dict or None for prices (price type code -> {"price": decimal text,
    "currency": code}) and stocks (warehouse -> {"quantity": decimal text or None,
    and "kind", "text" when the cell was not a plain figure}).

    parse() hands them to a sink with a ``take_extras`` method before the rows they
    belong to; without a sink they are in ParsedFile.extras."""

    first_row: int
    count: int
    values: dict[str, list]

    def row(self, row_number: int) -> dict[str, object]:
        i = row_number - self.first_row
        return {k: v[i] for k, v in self.values.items()}


@dataclass
class ParsedFile:
    """Typed rows of one price list.

    ``rows`` are tuples ``(row_number, sku, name, price, currency, quantity)``;
    ``errors`` are ``(row_number, reason)`` for rows that look like data but fail, at most
    Limits.max_errors of them (``rows_failed`` counts them all); ``rows_ok`` counts the
    good rows (``rows`` is empty when parse() handed them to a sink); ``rows_total`` counts data
    rows (ok + failed); ``skipped_rows`` counts empty, heading, totals and repeated-header
    rows, of which ``skipped_headings`` are group and section headings (numbered or not,
    "1.1. Дрели") and notes, ``skipped_totals`` totals rows ("Итого", "Всего", "Total").
    ``header_row`` is 1-based; 0 when every required column was given as a letter and
    the file has no recognisable header. ``warnings`` say what was read only in
    part: cells past Limits.max_columns, lines above the header that were not read.
    """

    format: str
    rows: list[Row]
    errors: list[tuple[int, str]]
    rows_total: int
    header_row: int
    columns: dict[str, str]
    sheet: str | None = None
    encoding: str | None = None
    delimiter: str | None = None
    skipped_rows: int = 0
    skipped_headings: int = 0
    skipped_totals: int = 0
    # The SKUs of the failed rows that had one, as many as ``errors`` keeps.
    failed_skus: list[str] = field(default_factory=list)
    # Good rows; equal to len(rows) unless parse() handed them to a sink.
    rows_ok: int = -1
    warnings: list[str] = field(default_factory=list)
    # Values beyond FIELDS (ExtraColumns), when parse() had no sink to hand them to.
    extras: list[ExtraColumns] = field(default_factory=list)
    # Rows stored with something to say, (row_number, reason) (an invalid barcode), at
    # most Limits.max_errors of them; ``rows_warned`` counts them all.
    row_warnings: list[tuple[int, str]] = field(default_factory=list)
    rows_warned: int = 0

    def extra(self, row_number: int) -> dict[str, object]:
        """The values beyond FIELDS of a row ({} when it has none); a row read twice
        (the quote-free path gives a text back to the row loop) has its last values."""
        for chunk in reversed(self.extras):
            if chunk.first_row <= row_number < chunk.first_row + chunk.count:
                return chunk.row(row_number)
        return {}

    def __post_init__(self) -> None:
        if self.rows_ok < 0:
            self.rows_ok = len(self.rows)

    @property
    def rows_failed(self) -> int:
        return self.rows_total - self.rows_ok


class ColumnCuts:
    """Rows whose cells past Limits.max_columns were cut, for the file's warning."""

    def __init__(self) -> None:
        self.rows = 0
        self.first = 0  # row number of the first one

    def note(self, row_number: int) -> None:
        self.rows += 1
        if not self.first or row_number < self.first:
            self.first = row_number

    def add(self, other: ColumnCuts) -> None:
        if other.rows:
            self.rows += other.rows
            if not self.first or other.first < self.first:
                self.first = other.first

    def warning(self, width: int) -> str | None:
        if not self.rows:
            return None
        return Text(
            CELLS_CUT,
            rows=self.rows,
            width=width,
            setting=limit_name("max_columns"),
            first=str(self.first),
        )
