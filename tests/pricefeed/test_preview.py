"""pricefeed.imports.preview: an upload's size is checked before its bytes are read, and
only the rows shown are kept, however long the file."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from devkit import hostile_files
from devkit.samples import price_list_csv
from pricefeed.forms import PreviewForm
from pricefeed.imports import preview
from pricefeed.models import PriceImport
from pricefeed.parsing import sample

pytestmark = pytest.mark.usefixtures("fast_password_hashing")


class Unread(SimpleUploadedFile):
    """An upload whose bytes must not be read."""

    def read(self, *args, **kwargs):
        raise AssertionError("the upload was read")

    def chunks(self, *args, **kwargs):
        raise AssertionError("the upload was read")


NAMES = ("Болт оцинкованный", "Гайка шестигранная", "Шайба плоская", "Саморез по дереву")


def long_csv(count: int) -> bytes:
    return price_list_csv([(f"S-{i:05}", NAMES[i % 4], Decimal(i), 1) for i in range(1, count + 1)])


def test_an_upload_over_the_file_limit_is_refused_before_it_is_read(config, settings):
    settings.PRICEFEED_PARSE_MAX_FILE_BYTES = 1000
    upload = Unread("big.csv", b"x" * 1001)

    (result,) = preview.preview_upload(config=config, upload=upload)

    assert result.error == (
        "the file is 1,001 bytes, over the 1,000-byte limit "
        "(max_file_bytes, setting PRICEFEED_PARSE_MAX_FILE_BYTES)"
    )
    assert result.parsed is None


def test_the_preview_form_refuses_an_upload_over_the_file_limit(settings):
    settings.PRICEFEED_PARSE_MAX_FILE_BYTES = 1000
    form = PreviewForm(data={}, files={"file": Unread("big.csv", b"x" * 1001)})

    assert not form.is_valid()
    assert form.errors["file"] == [
        "The file is 1,001 bytes, over the 1,000-byte limit "
        "(max_file_bytes, setting PRICEFEED_PARSE_MAX_FILE_BYTES)."
    ]


def test_the_preview_page_shows_the_size_refusal(admin_client, config, settings):
    settings.PRICEFEED_PARSE_MAX_FILE_BYTES = 1000
    url = reverse("admin:pricefeed_pricelistconfig_preview", args=[config.pk])

    response = admin_client.post(url, {"file": SimpleUploadedFile("big.csv", b"x" * 1001)})

    content = response.content.decode()
    assert "over the 1,000-byte limit" in content
    assert "An import would end" not in content


def test_only_the_rows_shown_are_kept_but_all_are_counted(config):
    (result,) = preview.preview_file(config=config, filename="p.csv", data=long_csv(5000))

    assert result.parsed is not None
    assert result.parsed.rows == []  # handed to the sink, which kept twenty
    assert (result.parsed.rows_ok, len(result.rows)) == (5000, 20)
    assert [r[1] for r in result.sample] == [f"S-{i:05}" for i in range(1, 21)]
    assert result.verdict == "An import would end SUCCEEDED."
    assert not PriceImport.objects.exists()


def test_the_row_count_asked_for_is_kept(config):
    (result,) = preview.preview_file(config=config, filename="p.csv", data=long_csv(50), rows=5)

    assert [r[1] for r in result.sample] == [f"S-{i:05}" for i in range(1, 6)]


def test_the_first_rows_sink_copies_what_it_keeps():
    sink = sample.FirstRows(3)
    batch = [(1, "a"), (2, "b")]
    sink(batch)
    batch.clear()  # parse() reuses its lists
    sink([(3, "c"), (4, "d")])
    assert sink.rows == [(1, "a"), (2, "b"), (3, "c")]


def test_warnings_are_shown_in_the_preview(admin_client, config):
    wide = "Артикул;Наименование;Цена\r\nA-1;Болт;1,50" + ";" * 2000 + "\r\n"
    url = reverse("admin:pricefeed_pricelistconfig_preview", args=[config.pk])

    response = admin_client.post(url, {"file": SimpleUploadedFile("w.csv", wide.encode())})

    assert "cells past column 1,024" in response.content.decode()


def test_a_shared_string_bomb_is_refused_by_the_guard_in_the_preview(config):
    data = hostile_files.xlsx_shared_string_copies()

    (result,) = preview.preview_file(config=config, filename="p.xlsx", data=data)

    assert "PRICEFEED_PARSE_MAX_TEXT_BYTES" in result.error
    assert result.parsed is None


def test_a_reader_dying_in_the_child_ends_the_preview_with_why(config, settings):
    # A far cell makes calamine allocate a dense 31 x 999,990 grid (~1 GB): let through
    # by the guards here (no bound per byte), over a 256 MiB cap, so its allocation
    # fails and it aborts (exit 134).
    settings.PRICEFEED_PARSE_MAX_CELLS_PER_BYTE = 10**6
    settings.PRICEFEED_PREVIEW_MEMORY_LIMIT = 256 * 2**20
    data = hostile_files.xlsx_far_cell()

    (result,) = preview.preview_file(config=config, filename="p.xlsx", data=data)

    assert result.parsed is None
    assert "ended without a result" in result.error or "needs more than" in result.error


def test_the_preview_shows_every_column_of_a_rich_list_in_russian(admin_client, config):
    from tests.fixtures import price_layouts

    url = reverse("admin:pricefeed_pricelistconfig_preview", args=[config.pk])
    upload = SimpleUploadedFile("dealer.xlsx", price_layouts.dealer_xlsx())
    response = admin_client.post(url, {"file": upload}, HTTP_ACCEPT_LANGUAGE="ru")

    content = response.content.decode()
    (result,) = response.context["results"]
    headers, rows = result.table
    assert headers == [
        "артикул производителя",
        "бренд",
        "штрихкоды",
        "неверные штрихкоды",
        "единица измерения",
        "категория",
        "остаток как в файле",
        "цена: Розница",
        "цена: РРЦ",
    ]
    assert rows[0][6:] == [
        "DIN933-M8",
        "Bossard",
        f"{price_layouts.GOOD_EAN}, {price_layouts.GOOD_EAN_2}",
        "",
        "шт",
        "Крепёж / Болты",
        ">50",
        "14",
        "15.00",
    ]
    assert "цена: РРЦ" in content and "Крепёж / Болты" in content
    assert price_layouts.BAD_EAN in content  # the row warning
