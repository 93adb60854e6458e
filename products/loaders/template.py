"""Our own template: the header ``own_code;name;brand;article;barcode;unit;category``
(in any order; also the Russian names of the columns), as CSV (UTF-8 with or without a
BOM, or Windows-1251 as Excel saves it in Russia; ``;`` or ``,``) or xlsx (the first
sheet). Several barcodes in one cell are separated by ``|``; the category is a path
written with ``/`` ("Крепёж / Болты"). Only own_code and name are required.
"""

from __future__ import annotations

import csv
import io
import itertools
import time
from typing import Any, BinaryIO

from django.utils.translation import gettext as _

from .limits import CatalogueRefused, LoadLimits
from .rows import Rows, category_path

COLUMNS = ("own_code", "name", "brand", "article", "barcode", "unit", "category")
REQUIRED = ("own_code", "name")
# A header cell (lower case, spaces squeezed) -> the template's column.
SYNONYMS = {
    "own_code": ("own_code", "own code", "code", "код", "наш код", "код товара"),
    "name": ("name", "наименование", "название", "товар"),
    "brand": ("brand", "бренд", "производитель", "марка", "торговая марка"),
    "article": ("article", "артикул", "артикул производителя"),
    "barcode": ("barcode", "barcodes", "ean", "штрихкод", "штрихкоды", "штрих-код"),
    "unit": ("unit", "ед.", "ед", "ед. изм.", "единица", "единица измерения"),
    "category": ("category", "категория", "группа", "раздел"),
}
HEADER_NAMES = {name: column for column, names in SYNONYMS.items() for name in names}
# The header is found within the first lines that are not empty.
HEADER_SEARCH_LINES = 20
CHECK_EVERY = 50_000
# Lines of a CSV file checked together (Rows.add_chunk).
CHUNK = 2048


def header_columns(cells: list[str]) -> dict[str, int] | None:
    """The template's columns found in a header row (column -> index), or None when
    the row is not our header (own_code or name missing)."""
    found: dict[str, int] = {}
    for index, cell in enumerate(cells):
        key = " ".join(str(cell or "").lstrip("\ufeff").strip().lower().split())
        column = HEADER_NAMES.get(key)
        if column and column not in found:
            found[column] = index
    return found if all(c in found for c in REQUIRED) else None


def _missing_header() -> CatalogueRefused:
    return CatalogueRefused(
        _(
            "no header row of our template (own_code;name;brand;article;barcode;unit;"
            "category): own_code and name are required"
        )
    )


def _category(value: str, known: dict[str, str]) -> str:
    """A category cell as Product.category stores it; the few distinct paths of a
    catalogue are normalised once each (``known``)."""
    path = known.get(value)
    if path is None:
        path = category_path(value.split("/"))
        if len(known) < 100_000:
            known[value] = path
    return path


def read_csv(source: BinaryIO, limits: LoadLimits, rows: Rows) -> Rows:
    """The template as CSV. UTF-8 is tried first; a file that is not UTF-8 is read
    again as Windows-1251 (what Excel writes for "CSV" on a Russian system)."""
    rows.format = "csv"
    start = source.tell()
    try:
        return _read_csv(io.TextIOWrapper(source, encoding="utf-8-sig", newline=""), limits, rows)
    except UnicodeDecodeError:
        if rows.sent:
            raise CatalogueRefused(
                _("the file is not UTF-8 past its first %(rows)s products") % {"rows": rows.sent}
            ) from None
    source.seek(start)
    rows.reset()
    rows.notes.append(_("read as Windows-1251 (the file is not UTF-8)"))
    return _read_csv(io.TextIOWrapper(source, encoding="cp1251", newline=""), limits, rows)


def _read_csv(text: io.TextIOWrapper, limits: LoadLimits, rows: Rows) -> Rows:
    try:
        return _csv_rows(text, limits, rows, time.monotonic() + limits.max_seconds)
    finally:
        text.detach()  # the caller's file stays open


def _csv_rows(text: io.TextIOWrapper, limits: LoadLimits, rows: Rows, deadline: float) -> Rows:
    first = text.readline(1 << 16)
    delimiter = ";" if first.count(";") >= max(first.count(","), 1) else ","
    if "\t" in first and first.count("\t") > first.count(delimiter):
        delimiter = "\t"
    reader = csv.reader(itertools.chain([first], text), delimiter=delimiter)
    columns = None
    try:
        for _line in range(HEADER_SEARCH_LINES):
            cells = next(reader, None)
            if cells is None:
                break
            columns = header_columns(cells)
            if columns is not None:
                break
        if columns is None:
            raise _missing_header()
        index = [columns.get(column, -1) for column in COLUMNS]
        i_code = index[0]
        width = max(index) + 1
        known: dict[str, str] = {}
        chunk: list[list[str]] = []
        lines: list[int] = []
        read = 0
        for row in reader:
            if len(row) < width:
                if not any(row):
                    continue
                row += [""] * (width - len(row))
            if not row[i_code] and not any(row):
                continue
            chunk.append(row)
            lines.append(reader.line_num)
            if len(chunk) == CHUNK:
                read = _add_chunk(rows, lines, chunk, index, known, limits, read, deadline)
                chunk, lines = [], []
        if chunk:
            _add_chunk(rows, lines, chunk, index, known, limits, read, deadline)
    except csv.Error as exc:
        raise CatalogueRefused(
            _("line %(line)s cannot be read as CSV: %(error)s")
            % {"line": reader.line_num, "error": str(exc)[:200]}
        ) from None
    return rows


def _add_chunk(
    rows: Rows,
    lines: list[int],
    chunk: list[list[str]],
    index: list[int],
    known: dict[str, str],
    limits: LoadLimits,
    read: int,
    deadline: float,
) -> int:
    """Hands a chunk of lines to rows.add_chunk as columns, after the file's limits;
    returns the lines read so far."""
    read += len(chunk)
    if read > limits.max_rows:
        raise CatalogueRefused(_("more than %(limit)s products") % {"limit": limits.max_rows})
    if time.monotonic() > deadline:
        raise CatalogueRefused(
            _("reading took longer than %(limit)s seconds") % {"limit": limits.max_seconds}
        )
    # Every line has at least the columns up to the last one of ours (padded so); lines
    # longer than that differ in length, and their extra cells are not read.
    columns = list(zip(*chunk, strict=False))
    lacking = ("",) * len(chunk)  # a column the file lacks (-1): empty cells
    codes, names, brands, articles, barcodes, units, categories = (
        columns[i] if i >= 0 else lacking for i in index
    )
    # The chunk's few distinct category cells, each normalised once.
    paths = {cell: _category(cell, known) for cell in set(categories)}
    rows.add_chunk(
        lines,
        codes,
        names,
        brands,
        articles,
        barcodes,
        units,
        list(map(paths.__getitem__, categories)),
    )
    return read


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, str):
        return value
    return str(value)


def read_xlsx(source: BinaryIO, limits: LoadLimits, rows: Rows) -> Rows:
    """The template as an xlsx workbook, its first sheet; the workbook goes through the
    import's guard (zip and XML bombs, memory bombs for calamine) before it is opened."""
    from python_calamine import CalamineWorkbook

    from pricefeed import parsing
    from pricefeed.parsing.workbook_guard import check_workbook

    rows.format = "xlsx"
    data = source.read()
    deadline = time.monotonic() + limits.max_seconds
    try:
        check_workbook(data, parsing.Limits(max_file_bytes=max(len(data), 1)))
    except parsing.ParseError as exc:
        raise CatalogueRefused(str(exc)) from None
    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        sheet = book.get_sheet_by_index(0)
        start = sheet.start or (0, 0)
        cells_rows = sheet.iter_rows()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        raise CatalogueRefused(
            _("the workbook cannot be read: %(error)s") % {"error": str(exc)[:200]}
        ) from None
    del data
    columns = None
    number = start[0]
    for number, cells in enumerate(cells_rows, start=start[0] + 1):
        columns = header_columns([_cell(c) for c in cells])
        if columns is not None or number - start[0] >= HEADER_SEARCH_LINES:
            break
    if columns is None:
        raise _missing_header()
    index = [columns.get(column, -1) for column in COLUMNS]
    width = max(index) + 1
    header_number = number
    known: dict[str, str] = {}
    for number, cells in enumerate(cells_rows, start=header_number + 1):
        values = [_cell(c) for c in cells[:width]]
        if not any(values):
            continue
        values += [""] * (width - len(values)) + [""]
        if rows.count >= limits.max_rows:
            raise CatalogueRefused(_("more than %(limit)s products") % {"limit": limits.max_rows})
        if number % CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise CatalogueRefused(
                _("reading took longer than %(limit)s seconds") % {"limit": limits.max_seconds}
            )
        own_code, name, brand, article, barcode, unit, category = (values[i] for i in index)
        rows.add(number, own_code, name, brand, article, barcode, unit, _category(category, known))
    return rows
