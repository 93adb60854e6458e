"""Exports of an import's rows and of its diff (pricefeed.exports): read back with the
csv module and openpyxl, text that would start a formula comes back as text, numbers as
numbers, every change is listed, only people who may view imports get them, and the
rows are streamed as they are read."""

from __future__ import annotations

import csv
import inspect
import io
import threading
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

import openpyxl
import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.http import FileResponse, StreamingHttpResponse
from django.urls import reverse
from django.utils import translation

from access.roles import VIEWER
from pricefeed import exports
from pricefeed.imports.diff import DIFF_SAMPLE
from pricefeed.imports.storage import insert_items
from pricefeed.models import PriceImport, PriceListConfig
from tests.access.support import at_least, each_role, logged_in, staff
from tests.factories import create_config, create_message, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")
ROOT = Path(__file__).resolve().parents[2]

# Text a spreadsheet would run as a formula, and what each comes back as from xlsx (an
# XML parser reads a carriage return as a line feed).
FORMULAS = {"=1+1": "=1+1", "+7 999": "+7 999", "-x": "-x", "@SUM": "@SUM", "\tx": "\tx"}
FORMULAS_XLSX = {**FORMULAS, "\rx": "\nx"}
# (sku, name, price, currency, quantity)
ROWS = [
    ("A-1", "Болт М8 «оцинкованный»", Decimal("1234.5600"), "RUB", Decimal("10")),
    ("A-2", 'Гайка; шайба, "винт"', Decimal("-5.5000"), "RUB", Decimal("0.2500")),
    ("A-3", "Без цены", None, "", None),
    *((f"F-{i}", text, Decimal("0.0100"), "RUB", Decimal(1)) for i, text in enumerate(FORMULAS)),
    ("F-cr", "\rx", Decimal("12345678.9900"), "USD", Decimal(3)),
    ("=SKU", "формула в артикуле", Decimal("1"), "@EUR", Decimal(1)),
]


def make_import(config: PriceListConfig, rows) -> PriceImport:
    """A SUCCEEDED import of ``config`` from a message of its own holding ``rows``
    (sku, name, price, currency, quantity), stored as the import service stores them:
    for text no supplier file would get through the parser whole."""
    message = create_message(config.mailbox, b"Subject: x\r\n\r\nx\r\n")
    rows = list(rows)
    price_import = PriceImport.objects.create(
        message=message,
        config=config,
        attachment_key="part2",
        filename="прайс.csv",
        status=Status.SUCCEEDED,
        rows_total=len(rows),
        rows_ok=len(rows),
    )
    insert_items(price_import.pk, [(n, *row) for n, row in enumerate(rows, 2)], config.pk)
    return price_import


def price_list(rows) -> bytes:
    """A supplier's ';' CSV of (sku, name, price, quantity) rows; a price given as text
    is written as it is (an unreadable row)."""
    lines = ["Артикул;Наименование;Цена;Остаток"]
    for sku, name, price, quantity in rows:
        text = price if isinstance(price, str) else f"{price:.2f}".replace(".", ",")
        lines.append(f"{sku};{name};{text};{quantity}")
    return ("\r\n".join(lines) + "\r\n").encode("cp1251")


def imported(mailbox, rows) -> PriceImport:
    """The import of a message with a price list of ``rows``, run by the import service
    (its diff against the config's catalogue, which it then becomes)."""
    (price_import,) = run_all(receive(mailbox, [("прайс.csv", price_list(rows))]))
    return price_import


def read_csv(data: bytes, delimiter: str) -> list[list[str]]:
    assert data.startswith(b"\xef\xbb\xbf")
    return list(csv.reader(io.StringIO(data[3:].decode(), newline=""), delimiter=delimiter))


def read_xlsx(data: bytes) -> list[list[openpyxl.cell.Cell]]:
    book = openpyxl.load_workbook(io.BytesIO(data))
    return [list(row) for sheet in book.worksheets for row in sheet.iter_rows()]


def number(text: str, delimiter: str) -> Decimal:
    return Decimal(text.replace(",", ".") if delimiter == ";" else text)


def rows_csv(price_import: PriceImport, delimiter: str) -> bytes:
    table = exports.import_rows(price_import)
    return b"".join(exports.csv_chunks(table, delimiter=delimiter))


def rows_xlsx(price_import: PriceImport) -> bytes:
    out = io.BytesIO()
    exports.write_xlsx(exports.import_rows(price_import), out)
    return out.getvalue()


# -- the files ---------------------------------------------------------------------------


def check_rows_csv(price_import: PriceImport, delimiter: str) -> None:
    header, *lines = read_csv(rows_csv(price_import, delimiter), delimiter)

    assert header == ["sku", "name", "price", "currency", "quantity"]
    assert len(lines) == len(ROWS)
    for line, (sku, name, price, currency, quantity) in zip(lines, ROWS, strict=True):
        guard = "'" if name[:1] in "=+-@\t\r" else ""
        assert line[1] == guard + name
        assert line[0] == ("'" if sku.startswith("=") else "") + sku
        assert line[3] == ("'" if currency.startswith("@") else "") + currency
        assert (number(line[2], delimiter) if line[2] else None) == price
        assert (number(line[4], delimiter) if line[4] else None) == quantity
    # A negative price is a number: no quote in front of it.
    assert lines[1][2] == ("-5,5" if delimiter == ";" else "-5.5")


@pytest.mark.django_db
@pytest.mark.parametrize("delimiter", [";", ","])
def test_rows_as_csv_read_back_with_formulas_as_text(config, delimiter):
    check_rows_csv(make_import(config, ROWS), delimiter)


def check_rows_xlsx(price_import: PriceImport) -> None:
    header, *lines = read_xlsx(rows_xlsx(price_import))

    assert [cell.value for cell in header] == ["sku", "name", "price", "currency", "quantity"]
    assert len(lines) == len(ROWS)
    for cells, (sku, name, price, currency, quantity) in zip(lines, ROWS, strict=True):
        expected = FORMULAS_XLSX.get(name, name)
        assert cells[1].value == expected
        assert cells[1].data_type == "s"  # text, never a formula ("f")
        assert cells[1].quotePrefix == (name[:1] in "=+-@\t\r")
        assert cells[0].value == sku and cells[0].data_type == "s"
        assert (cells[3].value or "") == currency
        assert cells[3].data_type == ("s" if currency else "n")  # an empty cell
        if price is None:
            assert cells[2].value is None
        else:
            assert cells[2].data_type == "n"
            assert Decimal(str(cells[2].value)) == price
            assert cells[2].number_format == exports.PRICE_FORMAT
        assert (None if cells[4].value is None else Decimal(str(cells[4].value))) == quantity


@pytest.mark.django_db
def test_rows_as_xlsx_read_back_with_formulas_as_text_and_prices_as_numbers(config):
    check_rows_xlsx(make_import(config, ROWS))


@pytest.mark.django_db
def test_xlsx_drops_what_a_workbook_cannot_hold(config):
    price_import = make_import(
        config,
        [
            ("A-1", "Болт\x01 М8\x1f\ufffe", Decimal(1), "RUB", None),
            ("A-2", "=" + "Ж" * 40_000, Decimal(1), "RUB", None),
        ],
    )

    _, first, second = read_xlsx(rows_xlsx(price_import))

    assert first[1].value == "Болт М8"
    assert second[1].value == "=" + "Ж" * (exports.XLSX_MAX_TEXT - 1)
    assert second[1].data_type == "s"


NUMBERS = ["12.5000", "-3.2500", "100", "-1+2", "=1", Decimal("-0.5"), 1.5, 7, None]


def numbers_table() -> exports.Table:
    return exports.Table(
        [exports.Column("n", numeric=True, number_format=exports.PRICE_FORMAT)],
        [(value,) for value in NUMBERS],
        "t",
    )


def test_a_numeric_column_writes_numbers_and_guards_anything_else():
    _, *lines = read_csv(b"".join(exports.csv_chunks(numbers_table())), ";")

    assert [cells for (cells,) in lines] == [
        "12,5",
        "-3,25",
        "100",
        "'-1+2",
        "'=1",
        "-0,5",
        "1,5",
        "7",
        "",
    ]


def test_a_numeric_column_in_xlsx_holds_numbers_and_text_as_text():
    out = io.BytesIO()
    exports.write_xlsx(numbers_table(), out)

    _, *lines = read_xlsx(out.getvalue())

    assert [cell.value for (cell,) in lines] == [12.5, -3.25, 100, "-1+2", "=1", -0.5, 1.5, 7]
    assert [cell.data_type for (cell,) in lines] == ["n", "n", "n", "s", "s", "n", "n", "n"]


def test_xlsx_continues_on_another_sheet_past_a_sheets_rows(monkeypatch):
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 4)
    rows = [(f"A-{i}", Decimal(i)) for i in range(7)]
    table = exports.Table([exports.Column("sku"), exports.Column("price")], iter(rows), "Строки")
    out = io.BytesIO()

    assert exports.write_xlsx(table, out) == 7

    book = openpyxl.load_workbook(out)
    assert book.sheetnames == ["Строки", "Строки (2)", "Строки (3)"]
    values = [[cell.value for cell in row] for sheet in book for row in sheet.iter_rows()]
    assert values == [
        ["sku", "price"],
        *[[f"A-{i}", i] for i in range(3)],
        ["sku", "price"],
        *[[f"A-{i}", i] for i in range(3, 6)],
        ["sku", "price"],
        ["A-6", 6],
    ]


# -- the diff ----------------------------------------------------------------------------

# The old list: A-0 … A-199. The new one: A-0 … A-59 gone, A-60 … A-119 re-priced, A-150
# twice (its last row re-priced), B-0 … B-69 new.
OLD = [(f"A-{i}", f"Товар {i}", Decimal(100 + i), 1) for i in range(200)]
NEW = [
    *(
        (sku, name, price + 1 if i < 120 else price, q)
        for i, (sku, name, price, q) in enumerate(OLD)
        if i >= 60
    ),
    ("A-150", "Товар 150", Decimal("1.00"), 1),
    *((f"B-{i}", f"Новинка {i}", Decimal("12.50"), 1) for i in range(70)),
]
ADDED = [f"B-{i}" for i in range(70)]
REMOVED = [f"A-{i}" for i in range(60)]
CHANGED = [*(f"A-{i}" for i in range(60, 120)), "A-150"]
KINDS = ("added", "unreadable", "removed", "changed")


def diff_lines(price_import: PriceImport) -> list[list[str]]:
    header, *lines = read_csv(
        b"".join(exports.csv_chunks(exports.import_diff(price_import), delimiter=";")), ";"
    )
    assert header == ["change", "sku", "name", "old price", "new price", "currency"]
    return lines


def check_diff_export(mailbox) -> None:
    imported(mailbox, OLD)
    price_import = imported(mailbox, NEW)
    assert price_import.diff["added"] > DIFF_SAMPLE
    assert len(price_import.diff["added_sample"]) == DIFF_SAMPLE

    lines = diff_lines(price_import)

    assert [line[1] for line in lines if line[0] == "added"] == ADDED
    assert sorted(line[1] for line in lines if line[0] == "removed") == sorted(REMOVED)
    assert [line[1] for line in lines if line[0] == "changed"] == CHANGED
    assert len(lines) == len(ADDED) + len(REMOVED) + len(CHANGED)
    by_sku = {line[1]: line for line in lines}
    assert by_sku["A-60"][2:] == ["Товар 60", "160", "161", ""]
    assert by_sku["A-150"][2:] == ["Товар 150", "250", "1", ""]
    assert by_sku["B-3"][2:] == ["Новинка 3", "", "12,5", ""]
    assert by_sku["A-0"][2:] == ["Товар 0", "100", "", ""]

    book = io.BytesIO()
    assert exports.write_xlsx(exports.import_diff(price_import), book) == len(lines)


@pytest.mark.django_db
def test_diff_export_lists_every_added_removed_and_changed_sku_beyond_the_sample(mailbox, config):
    check_diff_export(mailbox)


def check_diff_counts(mailbox) -> None:
    """Each kind of change as many times as the import's diff counts it: a PARTIAL
    import, whose unreadable row's SKU keeps its value (or, when the import cannot tell
    which rows they were, whose missing SKUs are not removed)."""
    imported(mailbox, OLD)
    price_import = imported(mailbox, [*NEW, ("A-199", "Товар 199", "по запросу", 1)])
    assert price_import.status == Status.PARTIAL

    lines = diff_lines(price_import)

    counted = {kind: sum(line[0] == kind for line in lines) for kind in KINDS}
    assert counted == {kind: price_import.diff.get(kind, 0) for kind in KINDS}
    assert counted["added"] == len(ADDED) and counted["changed"] == len(CHANGED)


@pytest.mark.django_db
def test_diff_export_of_a_partial_import_counts_as_its_diff(mailbox, config):
    check_diff_counts(mailbox)


@pytest.mark.django_db
def test_diff_export_is_against_the_catalogue_as_the_diff_found_it(mailbox, config):
    imported(mailbox, OLD[:3])
    price_import = imported(mailbox, OLD[1:4])
    imported(mailbox, OLD[5:6])  # later imports change the catalogue again

    lines = diff_lines(price_import)

    assert [line[:2] for line in lines] == [["added", "A-3"], ["removed", "A-0"]]


@pytest.mark.django_db
def test_diff_export_of_a_first_import_adds_every_sku(mailbox, config):
    price_import = imported(mailbox, [*OLD[:3], OLD[0]])

    assert [line[:2] for line in diff_lines(price_import)] == [
        ["added", "A-1"],
        ["added", "A-2"],
        ["added", "A-0"],
    ]


@pytest.mark.django_db
def test_diff_export_of_a_delta_removes_nothing(mailbox, config):
    config.mode = PriceListConfig.Mode.DELTA
    config.save()
    imported(mailbox, OLD[:3])
    price_import = imported(mailbox, OLD[:1])

    assert diff_lines(price_import) == []


@pytest.mark.django_db
def test_diff_export_of_the_same_list_again_is_empty(mailbox, config):
    imported(mailbox, OLD[:3])
    price_import = imported(mailbox, OLD[:3])

    assert diff_lines(price_import) == []


# -- the admin ---------------------------------------------------------------------------


def export_url(price_import: PriceImport, what: str, file_format: str) -> str:
    return reverse(
        f"admin:pricefeed_priceimport_export_{what}", args=[price_import.pk, file_format]
    )


@pytest.mark.django_db
def test_import_page_links_to_its_exports(admin_client, mailbox, config):
    imported(mailbox, OLD[:3])
    price_import = imported(mailbox, OLD[:2])

    page = admin_client.get(reverse("admin:pricefeed_priceimport_change", args=[price_import.pk]))

    content = page.content.decode()
    for what in ("rows", "diff"):
        for file_format in ("csv", "csv-comma", "xlsx"):
            assert export_url(price_import, what, file_format) in content
    assert "CSV (;)" in content and "Export diff:" in content


@pytest.mark.django_db
def test_csv_is_streamed_as_the_rows_are_read(admin_client, config, monkeypatch):
    monkeypatch.setattr(exports, "CSV_CHUNK_ROWS", 10)
    price_import = make_import(
        config, [(f"A-{i}", "Болт", Decimal(i), "RUB", 1) for i in range(95)]
    )

    response = admin_client.get(export_url(price_import, "rows", "csv"))

    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert inspect.isgenerator(exports.import_rows(price_import).rows)
    chunks = iter(response.streaming_content)
    assert next(chunks) == "\ufeffsku;name;price;currency;quantity\r\n".encode()
    assert next(chunks).count(b"\r\n") == 10  # the first rows, while the rest wait
    assert sum(chunk.count(b"\r\n") for chunk in chunks) == 85
    assert response["Content-Type"] == "text/csv; charset=utf-8"


@pytest.mark.django_db
def test_a_stream_stopped_early_ends_its_reading(config, monkeypatch):
    """The client went away: the rows' transaction ends, the fetching thread too, and
    the connection goes on."""
    monkeypatch.setattr(exports, "CSV_CHUNK_ROWS", 10)
    monkeypatch.setattr(exports, "CHUNK_ROWS", 10)
    price_import = make_import(
        config, [(f"A-{i}", "Болт", Decimal(i), "RUB", 1) for i in range(200)]
    )
    savepoints = list(connection.savepoint_ids)
    chunks = exports.csv_chunks(exports.import_rows(price_import))

    next(chunks), next(chunks)
    assert len(connection.savepoint_ids) == len(savepoints) + 1  # reading
    chunks.close()

    assert connection.savepoint_ids == savepoints
    assert not [t for t in threading.enumerate() if t.name == "export-fetch"]
    assert PriceImport.objects.filter(pk=price_import.pk).exists()


@pytest.mark.django_db
def test_exports_are_files_named_after_config_and_import(admin_client, mailbox):
    create_config(mailbox, name='Опт/розница "Юг"')
    price_import = imported(mailbox, OLD[:2])

    csv_response = admin_client.get(export_url(price_import, "rows", "csv-comma"))
    xlsx_response = admin_client.get(export_url(price_import, "diff", "xlsx"))

    name = quote(f"Опт_розница _Юг-{price_import.pk}")
    assert csv_response["Content-Disposition"] == f"attachment; filename*=utf-8''{name}-rows.csv"
    assert xlsx_response["Content-Disposition"] == f"attachment; filename*=utf-8''{name}-diff.xlsx"
    assert isinstance(xlsx_response, FileResponse)
    assert xlsx_response["Content-Type"] == exports.XLSX_CONTENT_TYPE
    lines = read_csv(b"".join(csv_response.streaming_content), ",")
    assert lines[1][:3] == ["A-0", "Товар 0", "100"]
    cells = read_xlsx(b"".join(xlsx_response.streaming_content))
    assert [cell.value for cell in cells[1][:2]] == ["added", "A-0"]


@pytest.mark.django_db
def test_headers_and_changes_are_in_the_requests_language(admin_client, mailbox, config):
    price_import = imported(mailbox, OLD[:1])

    with translation.override("ru"):
        response = admin_client.get(
            export_url(price_import, "diff", "csv"), HTTP_ACCEPT_LANGUAGE="ru"
        )
        data = b"".join(response.streaming_content)

    header, line = read_csv(data, ";")
    assert header == ["изменение", "артикул", "наименование", "старая цена", "новая цена", "валюта"]
    assert line[:2] == ["добавлен", "A-0"]


@pytest.mark.django_db
def test_an_unknown_format_or_a_missing_diff_is_not_found(admin_client, config):
    price_import = make_import(config, ROWS)

    assert admin_client.get(export_url(price_import, "rows", "pdf")).status_code == 404
    assert admin_client.get(export_url(price_import, "diff", "csv")).status_code == 404
    assert admin_client.get(export_url(price_import, "rows", "csv")).status_code == 200


@pytest.mark.django_db
@each_role
def test_exports_need_view_permission_on_imports(client, role, mailbox, config):
    price_import = imported(mailbox, OLD[:2])
    client = logged_in(client, role)

    for what in ("rows", "diff"):
        for file_format in ("csv", "csv-comma", "xlsx"):
            response = client.get(export_url(price_import, what, file_format))
            assert response.status_code == (200 if at_least(role, VIEWER) else 403)
            if response.status_code == 200:
                assert b"".join(response.streaming_content)  # and the response is closed


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("what", "permission"),
    [("rows", "view_priceitem"), ("diff", "view_catalogueentry")],
)
def test_an_export_needs_what_the_api_needs_to_read_the_same_rows(
    client, mailbox, config, what, permission
):
    """The viewer role without the rows' own view permission: the import's page opens,
    its export is refused, as the API refuses its items (api.views)."""
    price_import = imported(mailbox, OLD[:2])
    user = staff(VIEWER)
    group = user.groups.get()
    group.permissions.remove(Permission.objects.get(codename=permission))
    client.force_login(user)

    page = client.get(reverse("admin:pricefeed_priceimport_change", args=[price_import.pk]))
    assert page.status_code == 200
    # Not offered either.
    assert export_url(price_import, "rows", "csv") not in page.content.decode()
    for file_format in exports.FORMATS:
        assert client.get(export_url(price_import, what, file_format)).status_code == 403
