"""Running imports: parse, store rows, diff, statuses; idempotent and all-or-nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from devkit.samples import (
    price_list_csv,
    price_list_xlsx,
    zipped,
)
from mailboxes.models import InboundMessage
from pricefeed.imports import lifecycle
from pricefeed.models import PriceImport, PriceItem, PriceListConfig
from tests.factories import ROWS, english, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue")


def test_csv_price_list_is_parsed_and_stored_with_counts(mailbox, config):
    message = receive(mailbox, [("прайс.csv", price_list_csv(ROWS))])
    (price_import,) = run_all(message)
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    assert (price_import.rows_total, price_import.rows_ok, price_import.rows_failed) == (3, 3, 0)
    assert price_import.format == "csv"
    items = list(PriceItem.objects.filter(price_import=price_import).order_by("row_number"))
    assert [(i.sku, i.price, i.quantity) for i in items] == [
        ("A-1", Decimal("1234.50"), Decimal(10)),
        ("A-2", Decimal("1.15"), Decimal(0)),
        ("A-3", Decimal("0.60"), Decimal(500)),
    ]
    assert price_import.diff["previous_import"] is None
    assert price_import.sha256 and price_import.size > 0


def test_second_import_of_a_config_is_diffed_against_the_first(mailbox, config):
    first = run_all(receive(mailbox, [("p.xlsx", price_list_xlsx(ROWS))]))[0]
    changed = [
        ("A-1", "Болт М8", Decimal("1300.00"), 10),  # price changed
        ("A-2", "Гайка М8", Decimal("1.15"), 0),  # unchanged
        ("A-4", "Дюбель", Decimal("0.95"), 7),  # added; A-3 removed
    ]
    second = run_all(receive(mailbox, [("p.xlsx", price_list_xlsx(changed))]))[0]
    assert second.status == Status.SUCCEEDED, second.last_error
    assert second.diff["previous_import"] == first.pk
    assert (second.diff["added"], second.diff["removed"], second.diff["changed"]) == (1, 1, 1)
    assert second.diff["added_sample"] == ["A-4"]
    assert second.diff["removed_sample"] == ["A-3"]
    assert second.diff["changed_sample"] == [{"sku": "A-1", "old": "1234.5", "new": "1300"}]


def test_unsupported_file_fails_with_a_reason_and_stores_nothing(mailbox, config):
    message = receive(mailbox, [("price.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3 not a price list")])
    (price_import,) = run_all(message)
    assert price_import.status == Status.FAILED
    assert "unsupported format" in price_import.last_error
    assert not PriceItem.objects.exists()


def test_bad_rows_make_a_partial_import_and_too_many_fail_it_whole(mailbox, config):
    csv = (
        "Артикул;Наименование;Цена\r\n"
        "A-1;Болт;10,50\r\nA-2;Гайка;по запросу\r\n"
        + "".join(f"B-{i};Шайба;{i},00\r\n" for i in range(1, 19))
    ).encode("cp1251")
    (partial,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert partial.status == Status.PARTIAL
    assert (partial.rows_ok, partial.rows_failed) == (19, 1)
    assert partial.errors[0]["row"] == 3
    assert "по запросу" in english(partial.errors[0]["error"])

    config.max_bad_rows_percent = 1
    config.save()
    (failed,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert failed.status == Status.FAILED
    assert "over the limit of 1%" in failed.last_error
    # All or nothing: a failed import leaves no rows behind.
    assert not PriceItem.objects.filter(price_import=failed).exists()


def test_running_a_finished_import_again_changes_nothing(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    before = (price_import.status, price_import.finished_at, PriceItem.objects.count())
    assert lifecycle.price_import_run(import_id=price_import.pk, worker="other") is None
    price_import.refresh_from_db()
    assert (price_import.status, price_import.finished_at, PriceItem.objects.count()) == before


def test_zip_holding_two_price_lists_gives_two_imports_each_with_its_outcome(mailbox, config):
    archive = zipped(
        {
            "prices/opt.csv": price_list_csv(ROWS),
            "prices/retail.csv": price_list_csv(ROWS[:2]),
            "prices/readme.pdf": b"%PDF-1.4 not a price list",
        }
    )
    config.filename_pattern = "*.csv"
    config.save()
    message = receive(mailbox, [("prices.zip", archive)])
    imports = run_all(message)
    assert [(i.filename, i.status, i.rows_ok) for i in imports] == [
        ("opt.csv", Status.SUCCEEDED, 3),
        ("retail.csv", Status.SUCCEEDED, 2),
    ]
    assert [i.attachment_key.split("/", 1)[1] for i in imports] == [
        "prices/opt.csv",
        "prices/retail.csv",
    ]


def test_refused_archive_is_a_failed_import_with_the_reason(mailbox, config, settings):
    settings.PRICEFEED_PARSE_MAX_ENTRIES = 2
    archive = zipped({f"p{i}.csv": price_list_csv(ROWS) for i in range(5)})
    message = receive(mailbox, [("prices.zip", archive)])
    report = message.match_report["attachments"][0]
    assert report["archive_error"]
    (price_import,) = run_all(message)
    assert price_import.status == Status.FAILED
    assert price_import.last_error == english(report["archive_error"])
    assert price_import.last_error_text == report["archive_error"]


def test_delta_config_reports_no_removals_and_the_last_duplicate_sku_counts(mailbox, config):
    config.mode = PriceListConfig.Mode.DELTA
    config.save()
    run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    delta = [
        ("A-1", "Болт М8", Decimal("999.00"), 1),
        ("A-1", "Болт М8", Decimal("1234.50"), 1),  # the later row wins: unchanged
        ("A-9", "Анкер", Decimal("27.90"), 5),
    ]
    (second,) = run_all(receive(mailbox, [("p.csv", price_list_csv(delta))]))
    assert (second.diff["added"], second.diff["removed"], second.diff["changed"]) == (1, 0, 0)


def test_text_with_tabs_and_backslashes_is_stored_exactly(mailbox, config):
    csv = "Артикул;Наименование;Цена\r\nA\\1;Болт\tМ8 \\ оцинк.;10,50\r\n".encode("cp1251")
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    item = PriceItem.objects.get(price_import=price_import)
    assert (item.sku, item.name) == ("A\\1", "Болт\tМ8 \\ оцинк.")


@pytest.mark.usefixtures("imports_wait")
def test_transient_error_retries_later_and_fails_with_one_alert_past_the_limit(
    mailbox, config, monkeypatch, settings, mailoutbox, django_capture_on_commit_callbacks
):
    from pricefeed import parsing

    settings.ADMINS = [("Ops", "ops@example.test")]
    message = receive(mailbox, [("p.csv", price_list_csv(ROWS))])
    (price_import,) = message.imports.all()

    def broken(*args, **kwargs):
        raise OSError("disk went away")

    monkeypatch.setattr(parsing, "parse", broken)
    assert lifecycle.price_import_run(import_id=price_import.pk, worker="w") == Status.PENDING
    price_import.refresh_from_db()
    assert price_import.attempts == 1
    assert price_import.next_attempt_at is not None
    assert "disk went away" in price_import.last_error
    # Not due yet: a second run finds nothing to claim.
    assert lifecycle.price_import_run(import_id=price_import.pk, worker="w") is None

    settings.PRICEFEED_PROCESSING_MAX_ATTEMPTS = 2
    PriceImport.objects.filter(pk=price_import.pk).update(next_attempt_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.price_import_run(import_id=price_import.pk, worker="w") == Status.FAILED
    assert len(mailoutbox) == 1
    assert "price import failed" in mailoutbox[0].subject
    assert not PriceItem.objects.exists()


@pytest.mark.usefixtures("imports_wait")
def test_sweep_retries_an_expired_claim_and_requeues_a_forgotten_import_once(
    mailbox, config, no_queue, settings
):
    from datetime import timedelta

    from django.utils import timezone

    message = receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("b.csv", price_list_csv(ROWS))])
    stuck, forgotten = message.imports.order_by("pk")
    long_ago = timezone.now() - timedelta(hours=1)
    PriceImport.objects.filter(pk=stuck.pk).update(
        status=Status.RUNNING, claimed_by="dead:1", claimed_at=long_ago, attempts=1
    )
    PriceImport.objects.filter(pk=forgotten.pk).update(queued_at=long_ago)
    no_queue["imports"].clear()

    result = lifecycle.price_imports_sweep()

    stuck.refresh_from_db()
    assert stuck.status == Status.PENDING
    assert "claim by dead:1 expired" in stuck.last_error
    assert result.expired_claims == 1
    assert no_queue["imports"] == [forgotten.pk]
    assert lifecycle.price_imports_sweep().requeued == 0


@pytest.mark.usefixtures("imports_wait")
def test_an_import_whose_message_body_is_gone_fails_with_the_reason(mailbox, config):
    message = receive(mailbox, [("p.csv", price_list_csv(ROWS))])
    InboundMessage.objects.filter(pk=message.pk).update(raw=None)

    (price_import,) = run_all(message)

    assert price_import.status == Status.FAILED
    assert price_import.last_error == "the message's raw bytes are not stored"
    assert not PriceItem.objects.exists()
