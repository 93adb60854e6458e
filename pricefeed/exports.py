"""Exports of price rows as CSV or xlsx, in constant memory however many rows there are.

A Table is translated column titles and a lazy iterable of row tuples. The rows come
from the database a chunk at a time (a server-side cursor on PostgreSQL) and are
written as they come: CSV as a stream of byte chunks (csv_chunks, csv_response), xlsx
by openpyxl's write-only workbook into a temporary file that is then streamed
(write_xlsx, xlsx_response). The row sources here are an import's rows (import_rows)
and what it changed in its config's catalogue (import_diff); any queryset of rows with
the ITEM_FIELDS fields makes a Table through items_table.

A spreadsheet must not run what a supplier put in a cell: a text cell that starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written as text, with a
leading ``'`` in CSV (as OWASP recommends) and as a string cell, never a formula, in
xlsx. "Starts" is read as a spreadsheet may read it (formula_like): after NFKC (a
fullwidth ``＝`` is ``=``) and past leading white space, zero-width characters and a
BOM. Numbers (a negative price too) are written as numbers.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import queue
import re
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import IO, Any

from django.conf import settings
from django.contrib import messages
from django.contrib.postgres.aggregates import BoolOr
from django.core.exceptions import EmptyResultSet
from django.db import connection, connections, transaction
from django.db.models import (
    BooleanField,
    ExpressionWrapper,
    F,
    Func,
    Q,
    QuerySet,
    TextField,
    Value,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce
from django.http import FileResponse, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils.formats import number_format
from django.utils.http import content_disposition_header
from django.utils.translation import gettext, pgettext

from . import catalogue, columns, sql
from .models import PriceImport, PriceItem, PriceListConfig, PriceType

# Rows fetched from the database at a time.
# The formats an export is asked for in its URL, and the admin links' text for each.
FORMATS = {"csv": "CSV (;)", "csv-comma": "CSV (,)", "xlsx": "xlsx"}
CHUNK_ROWS = 5000
# Chunks fetched ahead of the one being written out (PostgreSQL).
FETCH_AHEAD = 2
# Rows written to the CSV buffer before it is handed on as one chunk (~100-200 KB).
CSV_CHUNK_ROWS = 2000
# What a text cell must not start with (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Invisible characters a formula may hide behind (besides white space): zero-width space,
# non-joiner, joiner, word joiner, invisible operators, the BOM (zero-width no-break
# space), the Mongolian vowel separator, the soft hyphen, and the direction marks,
# embeddings and isolates.
INVISIBLE = (
    "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad"
    "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Excel's rows per sheet; an export longer than that continues on another sheet.
XLSX_MAX_ROWS = 1_048_576
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# Characters an xlsx file cannot hold (they are not XML): C0 controls but tab, LF and CR
# (openpyxl refuses them), U+FFFE and U+FFFF.
XLSX_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# The longest text an xlsx cell holds.
XLSX_MAX_TEXT = 32_767
# A number as PostgreSQL writes a numeric (the only str a numeric column should hold).
NUMBER_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
# A price as an operator reads it: thousands grouped, two to four decimals.
PRICE_FORMAT = "#,##0.00##"

# The columns of a price row, in the order of export: an import's items, and a
# catalogue's rows, are read through a queryset with these fields.
ITEM_FIELDS = ("sku", "name", "price", "currency", "quantity")


@dataclass(frozen=True)
class Column:
    title: str
    # A column of numbers: its values are Decimal, int, float, None, or a number's text
    # as PostgreSQL writes it ("-1234.5000"; see _values), written as a number.
    numeric: bool = False
    # Number format of the column's numbers in xlsx.
    number_format: str = "General"


@dataclass(frozen=True)
class Table:
    columns: Sequence[Column]
    # Read lazily, once: a generator over a database cursor.
    rows: Iterable[Sequence[object]]
    # The xlsx sheet's name.
    title: str


# -- writers -----------------------------------------------------------------------------


def formula_like(text: str) -> bool:
    """Whether a spreadsheet may read ``text`` as a formula: it starts with one of
    FORMULA_STARTS, or does once NFKC-normalised (fullwidth ``＝``, ``＋``, small ``﹣``)
    and stripped of leading white space and INVISIBLE characters. Text that starts
    with a printable ASCII character other than those is answered at once (most
    cells: the export's hot loops call this for every text cell)."""
    if text.startswith(FORMULA_STARTS):
        return True
    if not text or ("!" <= text[0] <= "~"):
        return False
    head = unicodedata.normalize("NFKC", text)
    while (stripped := head.lstrip().lstrip(INVISIBLE)) != head:
        head = stripped
    return head.startswith(FORMULA_STARTS)


def guarded(text: str) -> str:
    """``text`` as a CSV cell that no spreadsheet runs as a formula."""
    return "'" + text if formula_like(text) else text


def csv_chunks(table: Table, *, delimiter: str = ";") -> Iterator[bytes]:
    """The table as UTF-8 CSV with a BOM (so that Excel reads it as UTF-8), a chunk of
    rows at a time. With ``;`` (Russian Excel's list separator) the decimal separator
    is a comma, with ``,`` a point, so that Excel reads the numbers as numbers."""
    point = "," if delimiter == ";" else "."
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow([guarded(column.title) for column in table.columns])
    yield "\ufeff".encode() + buffer.getvalue().encode()
    rows = iter(table.rows)
    numeric = [column.numeric for column in table.columns]

    def number_text(text: str) -> str:
        """A numeric column's str that starts like a formula: a negative number's text
        as a number, anything else guarded as text. (The text of a number written
        in line below, without its trailing zeros and with the decimal separator, is
        harmless whatever it holds: no spreadsheet runs what does not start so.)"""
        if not NUMBER_TEXT.fullmatch(text):
            return guarded(text)
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text.replace(".", point)

    def other(value: object) -> object:
        """Any cell but str."""
        if isinstance(value, Decimal):
            return _plain(value, point)
        if isinstance(value, float):
            return repr(value).replace(".", point)
        if isinstance(value, str):  # a subclass of str
            return guarded(str(value))
        return value  # None (an empty cell), int, …

    try:
        # Each row's cells converted in line, a chunk of rows at a time: this loop is
        # most of an export's time.
        while chunk := list(itertools.islice(rows, CSV_CHUNK_ROWS)):
            buffer.seek(0)
            buffer.truncate()
            writer.writerows(
                [
                    (
                        (
                            (value.rstrip("0").rstrip(".") if "." in value else value).replace(
                                ".", point
                            )
                            if not formula_like(value)
                            else number_text(value)
                        )
                        if is_number
                        else ("'" + value if formula_like(value) else value)
                    )
                    if type(value) is str
                    else other(value)
                    for value, is_number in zip(row, numeric, strict=False)
                ]
                for row in chunk
            )
            yield buffer.getvalue().encode()
    finally:
        # Stopped early (the client went away): the rows' transaction ends now.
        close = getattr(rows, "close", None)
        if close is not None:
            close()


def _plain(value: Decimal, point: str) -> str:
    """1234.5000 → "1234.5", 1300.0000 → "1300": exact, without the stored scale's
    trailing zeros."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text.replace(".", point) if point != "." else text


def write_xlsx(table: Table, file: IO[bytes]) -> int:
    """Writes the table as an xlsx workbook into ``file`` (openpyxl's write-only mode:
    each row goes to a temporary file as it is added); returns the rows written. Rows
    past a sheet's limit continue on a sheet of the same name and a number."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    book = Workbook(write_only=True)
    header = [column.title for column in table.columns]
    sheets = 0
    room = 0

    def next_sheet():
        nonlocal sheets, room
        sheets += 1
        new = book.create_sheet(_sheet_title(table.title, sheets))
        new.append([_xlsx_text(new, title) for title in header])
        room = XLSX_MAX_ROWS - 1
        return new

    sheet = next_sheet()

    # One cell object per column and kind, reused row after row: a write-only sheet
    # writes a row out as it is appended. Text that would start a formula goes in a
    # string cell marked "quote prefix" (what Excel itself does with '=1+1 typed in a
    # cell: shown and edited as text).
    def text_cell(ws):
        cell = WriteOnlyCell(ws)
        cell.quotePrefix = True
        return cell

    def number_cell(ws, number_format: str):
        cell = WriteOnlyCell(ws)
        cell.number_format = number_format
        return cell

    formats = [column.number_format for column in table.columns]
    numeric = [column.numeric for column in table.columns]
    texts = [text_cell(sheet) for _ in formats]
    numbers = [number_cell(sheet, f) for f in formats]
    written = 0
    rows = iter(table.rows)
    try:
        for row in rows:
            if not room:
                sheet = next_sheet()
                texts = [text_cell(sheet) for _ in formats]
                numbers = [number_cell(sheet, f) for f in formats]
            cells: list[object] = []
            for i, value in enumerate(row):
                if numeric[i] and type(value) is str and NUMBER_TEXT.fullmatch(value):
                    value = Decimal(value)
                if isinstance(value, str):
                    value = _xlsx_clean(str(value))
                    if formula_like(value):
                        cell = texts[i]
                        cell.value = value
                        cell.data_type = "s"  # openpyxl makes "=..." a formula
                        value = cell
                    elif not value:
                        value = None
                elif formats[i] != "General" and type(value) in (Decimal, int, float):
                    cell = numbers[i]
                    cell.value = value
                    value = cell
                cells.append(value)
            sheet.append(cells)
            room -= 1
            written += 1
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()
    book.save(file)
    return written


def _xlsx_text(sheet, text: str):
    from openpyxl.cell import WriteOnlyCell

    cell = WriteOnlyCell(sheet, _xlsx_clean(text))
    cell.data_type = "s"
    return cell


def _xlsx_clean(text: str) -> str:
    """``text`` as a workbook can hold it: without the characters XML cannot carry, and
    cut at a cell's limit of 32,767 characters."""
    if XLSX_ILLEGAL.search(text):
        text = XLSX_ILLEGAL.sub("", text)
    return text[:XLSX_MAX_TEXT]


def _sheet_title(title: str, number: int) -> str:
    """A valid sheet name: at most 31 characters, none of []:*?/\\."""
    title = re.sub(r"[\[\]:*?/\\]", "_", title).strip("'") or "export"
    if number == 1:
        return title[:31]
    suffix = f" ({number})"
    return title[: 31 - len(suffix)] + suffix


# -- responses ---------------------------------------------------------------------------


def stem(config: PriceListConfig, what: str) -> str:
    """``<config name>-<what>``, the name of an export without its extension, with what
    a file name cannot hold replaced; Cyrillic is kept (the header says it as RFC 6266
    filename*)."""
    name = re.sub(r"[^\w.()\- ]+", "_", config.name).strip(" ._") or "export"
    return f"{name}-{what}"


def response(
    request,
    table: Table,
    file_format: str,
    *,
    stem: str,
    rows: Callable[[], int],
    back: str,
) -> HttpResponseBase:
    """``table`` as the file ``file_format`` (a key of FORMATS) asks for, named ``stem``
    and its extension; an xlsx of more than PRICEFEED_EXPORT_XLSX_MAX_ROWS ``rows``
    (counted only for xlsx) goes back to ``back`` saying to use CSV."""
    if file_format == "xlsx":
        if refused := xlsx_refused(request, rows(), back):
            return refused
        return xlsx_response(table, f"{stem}.xlsx")
    return csv_response(table, f"{stem}.csv", delimiter="," if file_format == "csv-comma" else ";")


def csv_response(table: Table, name: str, *, delimiter: str = ";") -> StreamingHttpResponse:
    """The table streamed as CSV: rows are read and written as the client takes them."""
    response = StreamingHttpResponse(
        csv_chunks(table, delimiter=delimiter), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


def xlsx_response(table: Table, name: str) -> FileResponse:
    """The table as an xlsx file: written whole into a temporary file (xlsx is a zip,
    its directory comes last), then streamed from it; the file goes when the response
    is closed."""
    file = tempfile.TemporaryFile(prefix="pricefeed-export-", suffix=".xlsx")
    try:
        write_xlsx(table, file)
        file.seek(0)
    except BaseException:
        file.close()
        raise
    return FileResponse(file, as_attachment=True, filename=name, content_type=XLSX_CONTENT_TYPE)


# -- row sources -------------------------------------------------------------------------


def item_columns() -> list[Column]:
    """The titles of ITEM_FIELDS in the active language."""
    return [
        Column(gettext("sku")),
        Column(pgettext("price item", "name")),
        Column(gettext("price"), numeric=True, number_format=PRICE_FORMAT),
        Column(gettext("currency")),
        Column(gettext("quantity"), numeric=True),
    ]


def items_table(queryset: QuerySet, title: str) -> Table:
    """Any queryset of price rows with the ITEM_FIELDS fields, in its order, as a
    Table: read with a server-side cursor, CHUNK_ROWS at a time. Rows with the extra
    columns (PriceItem: brand, article, barcodes, ..., prices, stocks) have those of
    them some row holds, after ITEM_FIELDS (extra_columns)."""
    extra, values = extra_columns(queryset)
    rows = _values(queryset.values_list(*ITEM_FIELDS, *values))
    return Table([*item_columns(), *extra], rows, title)


# The extra columns of a price row, with what "none" is for each (its default).
_EXTRA_NONE: dict[str, Q] = {
    "article": Q(article=""),
    "brand": Q(brand=""),
    "barcodes": Q(barcodes=[]),
    "barcodes_invalid": Q(barcodes_invalid=[]),
    "unit": Q(unit=""),
    "pack": Q(pack__isnull=True),
    "min_order": Q(min_order__isnull=True),
    "category": Q(category=""),
    "stock_text": Q(stock_text=""),
}
_EXTRA_NUMERIC = {"pack", "min_order"}


def extra_columns(queryset: QuerySet) -> tuple[list[Column], list[Any]]:
    """The extra columns some row of ``queryset`` has (one look at them all: rows of a
    list without such columns export as before), as Columns and the values_list
    expressions that read them: texts, barcodes joined with ", ", each price type's
    price and currency, each warehouse's stock (its figure, else its text)."""
    model_fields = {f.name for f in queryset.model._meta.get_fields()}
    if "prices" not in model_fields:
        return [], []
    flags = queryset.order_by().aggregate(
        **{
            f"has_{name}": BoolOr(ExpressionWrapper(~none, output_field=BooleanField()))
            for name, none in _EXTRA_NONE.items()
        },
        has_prices=BoolOr(ExpressionWrapper(~Q(prices={}), output_field=BooleanField())),
        has_stocks=BoolOr(ExpressionWrapper(~Q(stocks={}), output_field=BooleanField())),
    )
    out: list[Column] = []
    values: list[Any] = []
    for name in _EXTRA_NONE:
        if not flags[f"has_{name}"]:
            continue
        if name in _EXTRA_NUMERIC:
            out.append(Column(str(columns.EXTRA_LABELS[name]), numeric=True))
            values.append(name)
        elif name.startswith("barcodes"):
            out.append(Column(str(columns.EXTRA_LABELS[name])))
            values.append(
                Func(F(name), Value(", "), function="array_to_string", output_field=TextField())
            )
        else:
            out.append(Column(str(columns.EXTRA_LABELS[name])))
            values.append(name)
    if flags["has_prices"]:
        names = dict(PriceType.objects.values_list("code", "name"))
        for code in _keys(queryset, "prices"):
            out.append(
                Column(columns.price_label(code, names), numeric=True, number_format=PRICE_FORMAT)
            )
            values.append(KeyTextTransform("price", KeyTransform(code, "prices")))
            out.append(Column(gettext("currency: %(type)s") % {"type": names.get(code, code)}))
            values.append(KeyTextTransform("currency", KeyTransform(code, "prices")))
    if flags["has_stocks"]:
        for warehouse in _keys(queryset, "stocks"):
            out.append(Column(columns.stock_label(warehouse)))
            values.append(
                Coalesce(
                    KeyTextTransform("quantity", KeyTransform(warehouse, "stocks")),
                    KeyTextTransform("text", KeyTransform(warehouse, "stocks")),
                )
            )
    return out, values


def _keys(queryset: QuerySet, field: str) -> list[str]:
    """The keys of a JSON object column over the rows (price type codes, warehouses),
    sorted."""
    keys = (
        queryset.order_by()
        .annotate(key=Func(F(field), function="jsonb_object_keys", output_field=TextField()))
        .values_list("key", flat=True)
        .distinct()
    )
    return sorted(keys)


def import_rows(price_import: PriceImport) -> Table:
    """The rows an import stored, in the file's order."""
    return items_table(PriceItem.objects.of_import(price_import.pk).order_by("pk"), gettext("Rows"))


def xlsx_refused(request, rows: int, back: str) -> HttpResponse | None:
    """Back to the page ``back`` with a message to use CSV when ``rows`` are more than an
    xlsx export holds (PRICEFEED_EXPORT_XLSX_MAX_ROWS); None when they are not."""
    limit = settings.PRICEFEED_EXPORT_XLSX_MAX_ROWS
    if rows <= limit:
        return None
    messages.warning(
        request,
        gettext(
            "%(rows)s rows are more than an xlsx export holds (%(limit)s, "
            "PRICEFEED_EXPORT_XLSX_MAX_ROWS): export them as CSV."
        )
        % {
            "rows": number_format(rows, force_grouping=True),
            "limit": number_format(limit, force_grouping=True),
        },
    )
    return HttpResponseRedirect(back)


def catalogue_rows(config: PriceListConfig, *, as_of: datetime | None = None) -> Table:
    """A config's catalogue now, or as it stood at ``as_of``, by SKU."""
    return items_table(catalogue.catalogue_current(config.pk, as_of=as_of), gettext("Catalogue"))


def import_diff(price_import: PriceImport) -> Table:
    """Every SKU the import added, removed or re-priced in its config's catalogue, as its
    diff (pricefeed.imports.diff) counts them, and those of its unreadable rows that
    kept their value: against the catalogue as it stood when the diff was made, that is
    as the import its diff names (``previous_import``) made it; a first import adds
    every SKU. Added first, then unreadable, removed and changed."""
    diff = price_import.diff or {}
    kinds = {
        "added": pgettext("price diff", "added"),
        "unreadable": pgettext("price diff", "kept, row unreadable"),
        "removed": pgettext("price diff", "removed"),
        "changed": pgettext("price diff", "changed"),
    }
    columns = [
        Column(gettext("change")),
        Column(gettext("sku")),
        Column(pgettext("price item", "name")),
        Column(gettext("old price"), numeric=True, number_format=PRICE_FORMAT),
        Column(gettext("new price"), numeric=True, number_format=PRICE_FORMAT),
        Column(gettext("currency")),
    ]
    title = gettext("Changes")
    if diff.get("previous_import") is not None and not any(diff.get(kind) for kind in kinds):
        # Nothing changed (often the same list sent again): nothing to read.
        return Table(columns, iter(()), title)
    return Table(columns, _diff_rows(price_import, diff.get("previous_import"), kinds), title)


def _diff_rows(
    price_import: PriceImport, previous_id: int | None, kinds: dict[str, str]
) -> Iterator[tuple]:
    info = price_import.parse_info or {}
    # The import's rows the diff compared: its last row per SKU (all, when none repeats).
    new, keys = catalogue.new_rows(price_import.pk, info.get("repeated_skus") is not False)
    params: list[Any] = list(keys)
    # The catalogue the diff was made against: as the previous import made it current.
    current_since = (
        PriceImport.objects.filter(pk=previous_id).values_list("accepted_at", flat=True).first()
        if previous_id is not None
        else None
    )
    if current_since is None:
        old = sql.EXPORT_NO_CATALOGUE
    else:
        old = sql.EXPORT_CATALOGUE_AS_OF
        # As the ORM stores a time.
        moment = connection.ops.adapt_datetimefield_value(current_since)
        params += [price_import.config_id, moment, moment]
    # A snapshot's unreadable rows keep their SKUs' values (None: too many to tell; the
    # import removes nothing), as in the diff.
    unreadable = info.get("unreadable_skus", [])
    kept, kept_params = catalogue.kept_skus(unreadable or [])
    snapshot = price_import.config.mode == PriceListConfig.Mode.SNAPSHOT
    params += [*kept_params, snapshot and unreadable is not None]
    query = sql.DIFF_ROWS.format(new=new, old=old, kept=kept)
    with _reading(), catalogue.planner(**sql.JOIN_PLANNER):
        with connection.chunked_cursor() as cursor:
            _numbers_as_text(cursor)
            cursor.execute(query, params)
            for chunk in _fetched_ahead(cursor):
                for kind, *row in chunk:
                    yield kinds[kind], *row


def _values(queryset: QuerySet) -> Iterator[tuple]:
    """The queryset's rows (a values_list), CHUNK_ROWS fetched at a time, fetched ahead
    (_fetched_ahead) as the driver reads them, numerics as their text
    (_numbers_as_text): Django's from_db_value converters are not applied, and no
    column of a price row needs one."""
    try:
        query, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return
    db = connections[queryset.db]
    with transaction.atomic(using=queryset.db), db.chunked_cursor() as cursor:
        _numbers_as_text(cursor)
        cursor.execute(query, params)
        for chunk in _fetched_ahead(cursor):
            yield from chunk


def _numbers_as_text(cursor) -> None:
    """The cursor (PostgreSQL) reads numerics as their text, which a numeric Column
    writes as it is: making a Decimal of each and formatting it again took a third of a
    CSV export's time."""
    from psycopg.types.string import TextLoader

    cursor.cursor.adapters.register_loader("numeric", TextLoader)


def _fetched_ahead(cursor) -> Iterator[list]:
    """The cursor's rows, a chunk at a time, fetched by a thread of its own at most
    FETCH_AHEAD chunks ahead: PostgreSQL reads the next chunk while this thread writes
    the last one out, instead of the two taking turns (a 300k-row CSV export: 156k rows/s
    against 130k, medians of 7 alternated runs on a busy two-CPU machine). The cursor
    is made, and the connection used again, only by the caller's thread; the fetching
    thread is done before this ends."""
    chunks: queue.Queue = queue.Queue(maxsize=FETCH_AHEAD)
    stop = threading.Event()

    def fetch() -> None:
        try:
            while not stop.is_set():
                chunk = cursor.fetchmany(CHUNK_ROWS)
                chunks.put(chunk)
                if not chunk:
                    return
        except BaseException as error:  # raised in the caller's thread
            chunks.put(error)

    fetcher = threading.Thread(target=fetch, name="export-fetch", daemon=True)
    fetcher.start()
    try:
        while True:
            chunk = chunks.get()
            if isinstance(chunk, BaseException):
                raise chunk
            if not chunk:
                return
            yield chunk
    finally:
        # Stopped early (the client went away) or done: let the fetcher finish what it
        # is fetching, and take what it queued, so that it ends.
        stop.set()
        while fetcher.is_alive():
            with contextlib.suppress(queue.Empty):
                chunks.get(timeout=0.05)
        fetcher.join()


def _reading() -> contextlib.AbstractContextManager:
    """The transaction an export reads in, one of its own: the cursor is then an
    ordinary server-side cursor (outside a transaction Django declares it WITH HOLD, and
    PostgreSQL computes the whole result before the first row), and the diff's SET
    LOCALs hold."""
    return transaction.atomic()
