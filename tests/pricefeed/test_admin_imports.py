"""The admin of price lists: previewing a file against a config, imports, their items."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from devkit.samples import price_list_csv, zipped
from pricefeed.models import PriceImport, PriceItem, PriceListConfig
from tests.factories import ROWS, create_config, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")


# 20 data rows, one of them (file row 3) with a price that is not a number: 5% bad rows,
# under the default limit of 10%.
ONE_BAD_ROW_CSV = (
    "Артикул;Наименование;Цена\r\n"
    "A-1;Болт;10,50\r\nA-2;Гайка;по запросу\r\n"
    + "".join(f"B-{i};Шайба;{i},00\r\n" for i in range(1, 19))
).encode("cp1251")

PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3 not a price list"


def import_of(mailbox, filename: str, data: bytes, *, subject: str = "Прайс") -> PriceImport:
    (price_import,) = run_all(receive(mailbox, [(filename, data)], subject=subject))
    return price_import


def preview_url(config: PriceListConfig) -> str:
    return reverse("admin:pricefeed_pricelistconfig_preview", args=[config.pk])


def change_url(price_import: PriceImport) -> str:
    return reverse("admin:pricefeed_priceimport_change", args=[price_import.pk])


def upload(client, config: PriceListConfig, filename: str, data: bytes):
    response = client.post(preview_url(config), {"file": SimpleUploadedFile(filename, data)})
    assert response.status_code == 200
    return response


# -- preview ----------------------------------------------------------------------------


def test_preview_page_shows_the_upload_form(admin_client, config):
    response = admin_client.get(preview_url(config))

    assert response.status_code == 200
    content = response.content.decode()
    assert 'enctype="multipart/form-data"' in content
    assert 'type="file" name="file"' in content
    assert "Preview a file against “Поставщик”" in content
    assert "An import would end" not in content


def test_preview_of_a_csv_shows_header_columns_rows_and_verdict_and_stores_nothing(
    admin_client, config
):
    response = upload(admin_client, config, "прайс.csv", price_list_csv(ROWS))

    content = response.content.decode()
    assert "<h2>прайс.csv</h2>" in content
    assert "Format csv" in content
    assert "encoding cp1251" in content
    assert "delimiter “;”" in content
    assert "header on row 2;" in content
    assert "3 valid row(s), 0 failed" in content
    columns = content.split("<p>Columns: ")[1].split("</p>")[0]
    assert "<b>sku</b> ← “" in columns
    assert "Артикул”" in columns
    assert "<b>name</b> ← “Наименование”" in columns
    assert "<b>price</b> ← “Цена, руб.”" in columns
    assert "<b>quantity</b> ← “Остаток”" in columns
    for row_number, sku, price in [(3, "A-1", "1234.50"), (4, "A-2", "1.15"), (5, "A-3", "0.60")]:
        assert f"<tr><td>{row_number}</td><td>{sku}</td>" in content
        assert f"<td>{price}</td>" in content
    assert "Гайка М8" in content
    assert "An import would end SUCCEEDED." in content
    assert "Row errors" not in content
    assert PriceImport.objects.count() == 0
    assert PriceItem.objects.count() == 0


def test_preview_maps_columns_to_the_header_row_it_reports_not_to_the_title_above(
    admin_client, config
):
    """The sample's title row ("Прайс-лист ООО «Поставщик»", row 1, one cell) is not part
    of the header the preview reports (row 2): sku's column is headed "Артикул"."""
    content = upload(admin_client, config, "прайс.csv", price_list_csv(ROWS)).content.decode()

    assert "header on row 2;" in content
    columns = content.split("<p>Columns: ")[1].split("</p>")[0]
    assert "Поставщик" not in columns
    assert "<b>sku</b> ← “Артикул”" in columns


def test_preview_shows_only_the_first_rows_of_a_long_file(admin_client, config):
    rows = [(f"S-{i:02}", "Болт", Decimal(i), 1) for i in range(1, 26)]

    content = upload(admin_client, config, "p.csv", price_list_csv(rows)).content.decode()

    assert "25 valid row(s), 0 failed" in content
    assert "<td>S-20</td>" in content
    assert "<td>S-21</td>" not in content


def test_preview_of_a_zip_shows_every_price_list_inside(admin_client, config):
    archive = zipped(
        {"prices/opt.csv": price_list_csv(ROWS), "prices/retail.csv": price_list_csv(ROWS[:2])}
    )

    content = upload(admin_client, config, "prices.zip", archive).content.decode()

    assert "<h2>prices.zip/prices/opt.csv</h2>" in content
    assert "<h2>prices.zip/prices/retail.csv</h2>" in content
    opt, retail = content.split("<h2>prices.zip/prices/retail.csv</h2>")
    opt = opt.split("<h2>prices.zip/prices/opt.csv</h2>")[1]
    assert "3 valid row(s)" in opt
    assert all(f"<td>{sku}</td>" in opt for sku in ("A-1", "A-2", "A-3"))
    assert "2 valid row(s)" in retail
    assert "<td>A-2</td>" in retail
    assert "<td>A-3</td>" not in retail
    assert content.count("An import would end SUCCEEDED.") == 2
    assert PriceImport.objects.count() == 0


def test_preview_of_a_pdf_says_the_format_is_unsupported(admin_client, config):
    content = upload(admin_client, config, "price.pdf", PDF).content.decode()

    assert "<h2>price.pdf</h2>" in content
    assert '<p class="errornote">unsupported format' in content
    assert "An import would end" not in content


def test_preview_of_a_csv_with_a_bad_row_shows_the_row_error_and_partial(admin_client, config):
    content = upload(admin_client, config, "p.csv", ONE_BAD_ROW_CSV).content.decode()

    assert "19 valid row(s), 1 failed" in content
    assert "<h3>Row errors</h3>" in content
    errors = content.split("<h3>Row errors</h3>")[1]
    assert "<tr><td>3</td><td>" in errors
    assert "по запросу" in errors
    assert "An import would end PARTIAL." in content
    assert PriceImport.objects.count() == 0
    assert PriceItem.objects.count() == 0


def test_preview_of_an_archive_refused_by_the_limits_shows_the_reason(
    admin_client, config, settings
):
    settings.PRICEFEED_PARSE_MAX_ENTRIES = 1
    archive = zipped({"a.csv": price_list_csv(ROWS), "b.csv": price_list_csv(ROWS)})

    content = upload(admin_client, config, "prices.zip", archive).content.decode()

    assert "<h2>prices.zip</h2>" in content
    assert "more than 1 archive entries in all" in content
    assert "An import would end" not in content


def test_preview_is_refused_to_staff_without_view_permission(client, config):
    """admin_view lets any active staff user in; the view must answer 403, not crash."""
    staff = User.objects.create_user("clerk", password="pw", is_staff=True)
    client.force_login(staff)

    response = client.get(preview_url(config))

    assert response.status_code == 403


# -- imports and their items ------------------------------------------------------------


def test_import_changelist_has_status_and_config_filters_and_shows_counts(
    admin_client, mailbox, config
):
    other = create_config(mailbox, name="Другой", sender_pattern="*@other.test")
    succeeded = import_of(mailbox, "p.csv", price_list_csv(ROWS))
    partial = import_of(mailbox, "q.csv", ONE_BAD_ROW_CSV)
    failed = import_of(mailbox, "price.pdf", PDF)
    url = reverse("admin:pricefeed_priceimport_changelist")

    response = admin_client.get(url)

    assert response.status_code == 200
    content = response.content.decode()
    assert "By status" in content
    filters = {spec.title: spec for spec in response.context["cl"].filter_specs}
    assert {"status", "config"} <= set(filters)
    assert "By config" in content
    assert "Другой" in content  # a config choice in the filter
    assert "3 price imports" in content
    result_list = response.context["cl"].result_list
    assert {(i.pk, i.status, i.rows_ok, i.rows_failed) for i in result_list} == {
        (succeeded.pk, Status.SUCCEEDED, 3, 0),
        (partial.pk, Status.PARTIAL, 19, 1),
        (failed.pk, Status.FAILED, 0, 0),
    }
    assert '<td class="field-rows">19 / <span class="pf-error">1</span></td>' in content
    assert '<td class="field-rows">3 / 0</td>' in content

    by_status = admin_client.get(url, {"status__exact": Status.FAILED})
    assert by_status.status_code == 200
    assert [i.pk for i in by_status.context["cl"].result_list] == [failed.pk]

    by_config = admin_client.get(url, {"config__id__exact": other.pk})
    assert by_config.status_code == 200
    assert list(by_config.context["cl"].result_list) == []
    by_config = admin_client.get(url, {"config__id__exact": config.pk})
    assert len(by_config.context["cl"].result_list) == 3


def test_succeeded_import_page_shows_counts_and_links_to_its_items(admin_client, mailbox, config):
    price_import = import_of(mailbox, "p.csv", price_list_csv(ROWS))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error

    response = admin_client.get(change_url(price_import))

    assert response.status_code == 200
    content = response.content.decode()
    assert "Succeeded" in content
    assert '<div class="readonly">3</div>' in content  # rows total and rows ok
    assert "first import of this config: 3 items" in content
    items_url = (
        reverse("admin:pricefeed_priceitem_changelist")
        + f"?price_import__id__exact={price_import.pk}"
    )
    assert f'<a href="{items_url}">3 items</a>' in content

    items = admin_client.get(items_url)

    assert items.status_code == 200
    assert sorted(i.sku for i in items.context["cl"].result_list) == ["A-1", "A-2", "A-3"]
    items_content = items.content.decode()
    for sku in ("A-1", "A-2", "A-3"):
        assert sku in items_content


def test_item_changelist_filtered_by_import_lists_only_that_imports_items(
    admin_client, mailbox, config
):
    first = import_of(mailbox, "p.csv", price_list_csv(ROWS[:1]))
    second = import_of(mailbox, "p.csv", price_list_csv(ROWS[1:]))
    url = reverse("admin:pricefeed_priceitem_changelist")

    response = admin_client.get(url, {"price_import__id__exact": second.pk})

    assert response.status_code == 200
    assert sorted(i.sku for i in response.context["cl"].result_list) == ["A-2", "A-3"]
    response = admin_client.get(url, {"price_import__id__exact": first.pk})
    assert [i.sku for i in response.context["cl"].result_list] == ["A-1"]


def test_items_cannot_be_deleted_one_by_one_the_next_diff_compares_with_them(
    admin_client, mailbox, config
):
    imported = import_of(mailbox, "p.csv", price_list_csv(ROWS))
    item = PriceItem.objects.filter(price_import=imported).first()

    page = admin_client.get(reverse("admin:pricefeed_priceitem_delete", args=[item.pk]))
    posted = admin_client.post(
        reverse("admin:pricefeed_priceitem_changelist"),
        {"action": "delete_selected", "_selected_action": [item.pk], "post": "yes"},
    )

    assert page.status_code == 403
    assert posted.status_code in (200, 302)
    assert PriceItem.objects.filter(price_import=imported).count() == len(ROWS)


def test_second_import_page_shows_the_diff_against_the_first(admin_client, mailbox, config):
    first = import_of(mailbox, "p.csv", price_list_csv(ROWS))
    changed = [
        ("A-1", "Болт М8", Decimal("1300.00"), 10),  # price changed
        ("A-2", "Гайка М8", Decimal("1.15"), 0),  # unchanged
        ("A-4", "Дюбель", Decimal("0.95"), 7),  # added; A-3 removed
    ]
    second = import_of(mailbox, "p.csv", price_list_csv(changed))
    assert second.status == Status.SUCCEEDED, second.last_error

    content = admin_client.get(change_url(second)).content.decode()

    assert "Changes against the current catalogue" in content
    assert (
        f"against the catalogue (current since import #{first.pk}): 1 added, 1 removed, "
        "1 price(s) changed"
    ) in content
    assert "<li>A-1: 1,234.50 → 1,300.00</li>" in content
    assert "<div>added: A-4</div>" in content
    assert "<div>removed: A-3</div>" in content
    # Prices as the reader's language writes them, as the catalogue shows them.
    russian = admin_client.get(change_url(second), HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    assert "<li>A-1: 1\xa0234,50 → 1\xa0300,00</li>" in russian
    assert f"текущего с импорта № {first.pk}" in russian
    assert f'"№ {second.message_id}' in russian  # its message, numbered the same way


def test_partial_import_page_shows_the_row_errors(admin_client, mailbox, config):
    partial = import_of(mailbox, "p.csv", ONE_BAD_ROW_CSV)
    assert partial.status == Status.PARTIAL

    content = admin_client.get(change_url(partial)).content.decode()

    assert "Partial (some rows failed)" in content
    assert "<table><tr><th>row</th><th>error</th></tr><tr><td>3</td><td>" in content
    assert "по запросу" in content
    assert "19 items" in content


def test_failed_import_page_shows_the_last_error(admin_client, mailbox, config):
    failed = import_of(mailbox, "price.pdf", PDF)
    assert failed.status == Status.FAILED
    assert failed.last_error.startswith("unsupported format")

    content = admin_client.get(change_url(failed)).content.decode()

    assert "Failed" in content
    assert failed.last_error in content


# -- rerun action -----------------------------------------------------------------------


def test_rerun_failed_queues_failed_imports_again_and_leaves_the_others(
    admin_client, mailbox, config
):
    failed = import_of(mailbox, "price.pdf", PDF)
    succeeded = import_of(mailbox, "p.csv", price_list_csv(ROWS))
    assert (failed.status, failed.attempts) == (Status.FAILED, 1)
    finished_at = succeeded.finished_at

    response = admin_client.post(
        reverse("admin:pricefeed_priceimport_changelist"),
        {"action": "rerun_failed", "_selected_action": [failed.pk, succeeded.pk]},
        follow=True,
    )

    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert "1 import queued again." in shown
    assert "1 skipped: not FAILED." in shown
    failed.refresh_from_db()
    assert (failed.status, failed.attempts, failed.last_error) == (Status.PENDING, 0, "")
    succeeded.refresh_from_db()
    assert (succeeded.status, succeeded.rows_ok, succeeded.finished_at) == (
        Status.SUCCEEDED,
        3,
        finished_at,
    )
    assert PriceItem.objects.filter(price_import=succeeded).count() == 3


def test_rerun_failed_hands_only_the_requeued_imports_to_the_queue(
    admin_client, mailbox, config, no_queue, django_capture_on_commit_callbacks
):
    failed = import_of(mailbox, "price.pdf", PDF)
    succeeded = import_of(mailbox, "p.csv", price_list_csv(ROWS))
    no_queue["imports"].clear()

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:pricefeed_priceimport_changelist"),
            {"action": "rerun_failed", "_selected_action": [failed.pk, succeeded.pk]},
        )

    assert no_queue["imports"] == [failed.pk]


# -- config -----------------------------------------------------------------------------


def test_config_change_page_links_to_the_preview(admin_client, config):
    response = admin_client.get(reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk]))

    assert response.status_code == 200
    assert (
        f'<a href="{preview_url(config)}">Preview a file against this config</a>'
        in response.content.decode()
    )


def config_post(config: PriceListConfig, **overrides: str) -> dict:
    data = {
        "name": config.name,
        "mailbox": str(config.mailbox_id),
        "enabled": "on",
        "sender_pattern": config.sender_pattern,
        "subject_pattern": "",
        "filename_pattern": config.filename_pattern,
        "sender_auth": config.sender_auth,
        "columns": "{}",
        "sheet": "",
        "number_format": PriceListConfig.NumberFormat.AUTO,
        "mode": PriceListConfig.Mode.SNAPSHOT,
        "default_currency": "",
        "max_bad_rows_percent": "10",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize("value", ["ten", "5%", "1.5", "-1"])
def test_config_form_rejects_a_max_bad_rows_percent_that_is_not_a_whole_number(
    admin_client, config, value
):
    url = reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk])

    response = admin_client.post(url, config_post(config, max_bad_rows_percent=value))

    assert response.status_code == 200  # the form again, not a redirect
    assert "max_bad_rows_percent" in response.context["adminform"].form.errors
    config.refresh_from_db()
    assert config.max_bad_rows_percent == 10


def test_config_form_saves_a_valid_max_bad_rows_percent(admin_client, config):
    url = reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk])

    response = admin_client.post(url, config_post(config, max_bad_rows_percent="25"))

    assert response.status_code == 302, response.context["adminform"].form.errors
    config.refresh_from_db()
    assert config.max_bad_rows_percent == 25
