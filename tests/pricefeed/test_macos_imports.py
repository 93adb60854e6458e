"""A zip made on macOS, end to end: decomposed names match the config's pattern, and the
metadata Finder adds (__MACOSX/, ._name) is no import of its own but listed as skipped."""

from __future__ import annotations

import io
import unicodedata

import pytest
from openpyxl import Workbook

from devkit.samples import price_list_xlsx, zipped
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

NAME = "Прайс-лист май.xlsx"


def test_a_macos_zip_imports_its_price_list_only(mailbox, config):
    config.filename_pattern = "прайс*май*"
    config.save()
    decomposed = unicodedata.normalize("NFD", NAME)
    assert decomposed != NAME
    archive = zipped(
        {
            decomposed: price_list_xlsx(ROWS),
            f"__MACOSX/._{decomposed}": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X",
        }
    )
    message = receive(mailbox, [("Архив.zip", archive)])
    (attached,) = message.match_report["attachments"]
    assert attached["members"] == [NAME]
    assert attached["skipped"] == [f"__MACOSX/._{NAME}"]
    (price_import,) = run_all(message)
    assert price_import.status == PriceImport.Status.SUCCEEDED, price_import.last_error
    assert (price_import.filename, price_import.rows_ok) == (NAME, len(ROWS))


def test_an_import_keyed_by_a_decomposed_name_before_the_change_still_finds_its_file(
    mailbox, config
):
    decomposed = unicodedata.normalize("NFD", NAME)
    message = receive(mailbox, [("Архив.zip", zipped({decomposed: price_list_xlsx(ROWS)}))])
    (price_import,) = message.imports.all()
    part = price_import.attachment_key.split("/", 1)[0]
    # As intake stored it before names were composed.
    PriceImport.objects.filter(pk=price_import.pk).update(
        attachment_key=f"{part}/{decomposed}", filename=decomposed
    )
    (price_import,) = run_all(message)
    assert price_import.status == PriceImport.Status.SUCCEEDED, price_import.last_error


def test_headings_and_totals_are_counted_in_the_import_not_failed(mailbox, config):
    wb = Workbook()
    ws = wb.active
    ws.append(["Артикул", "Наименование", "Цена", "Остаток", "Сумма"])
    for group in range(1, 6):
        ws.append([f"{group}.1. Группа {group}"])
        ws.merge_cells(start_row=ws.max_row, start_column=1, end_row=ws.max_row, end_column=5)
        ws.append([f"A-{group}", f"Товар {group}", 100, 1, 100])
    ws.append(["Итого", None, None, None, 500])
    buf = io.BytesIO()
    wb.save(buf)
    config.max_bad_rows_percent = 0
    config.save()
    (price_import,) = run_all(receive(mailbox, [("прайс.xlsx", buf.getvalue())]))
    assert price_import.status == PriceImport.Status.SUCCEEDED, price_import.last_error
    assert (price_import.rows_ok, price_import.rows_failed, price_import.rows_skipped) == (5, 0, 6)
    info = price_import.parse_info
    assert (info["skipped_headings"], info["skipped_totals"]) == (5, 1)
