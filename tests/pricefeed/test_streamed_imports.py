"""Rows stream into PostgreSQL while the file is read: all or nothing all the same."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devkit.samples import (
    price_list_csv,
    price_list_xlsx,
    price_rows,
    supplier_email,
)
from mailboxes.mime import attachment_payload
from outbox.models import OutboxEvent
from pricefeed import parsing
from pricefeed.imports import diff, lifecycle, storage
from pricefeed.imports.outcome import OUTCOME_EVENT
from pricefeed.models import PriceImport, PriceItem, PriceListConfig
from pricefeed.parsing import rows
from tests.factories import ROWS, english, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue")


@pytest.fixture
def small_chunks(monkeypatch):
    """Rows reach the database a few at a time, long before the file is read."""
    monkeypatch.setattr(rows, "SINK_CHUNK", 2)


@pytest.fixture
def column_chunks(monkeypatch):
    """Text tables are read a few rows at a time, so most go through RowBlocks."""
    monkeypatch.setattr(rows, "TEXT_CHUNK", 2)


def _csv(lines: list[str]) -> bytes:
    return ("Артикул;Наименование;Цена\r\n" + "".join(lines)).encode()


def test_a_refusal_after_rows_were_streamed_leaves_no_rows_and_the_reason(
    mailbox, config, settings, small_chunks
):
    settings.PRICEFEED_PARSE_MAX_ROWS = 5
    csv = _csv([f"A-{i};Болт;{i},50\r\n" for i in range(12)])
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.FAILED
    assert "more than 5 data rows" in price_import.last_error
    assert not PriceItem.objects.exists()
    assert (
        OutboxEvent.objects.filter(aggregate_id=str(price_import.pk), kind=OUTCOME_EVENT).count()
        == 1
    )


def test_too_many_bad_rows_fail_the_import_after_streaming_and_keep_the_counts(
    mailbox, config, small_chunks
):
    config.max_bad_rows_percent = 10
    config.save()
    csv = _csv([f"A-{i};Болт;{i},50\r\n" for i in range(8)] + ["B-1;Болт;?\r\n"] * 2)
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.FAILED
    assert (price_import.rows_ok, price_import.rows_failed) == (0, 2)
    assert "over the limit of 10%" in price_import.last_error
    assert not PriceItem.objects.exists()


def test_failed_rows_beyond_the_kept_errors_still_count_against_the_threshold(
    mailbox, config, settings
):
    # 30 of 100 rows fail but only 10 errors are kept: 30% is over the 20% limit.
    settings.PRICEFEED_PARSE_MAX_ERRORS = 10
    config.max_bad_rows_percent = 20
    config.save()
    csv = _csv([f"A-{i};Болт;{i},50\r\n" for i in range(70)] + ["B-1;Болт;?\r\n"] * 30)
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.FAILED
    assert price_import.rows_failed == 30
    assert len(price_import.errors) == 10
    assert price_import.parse_info["errors_total"] == 30


def test_streamed_rows_are_stored_exactly_with_a_late_decided_separator(
    mailbox, config, small_chunks
):
    # "1,234" is undecided until "1 234,50" shows a decimal comma; tabs and backslashes
    # in text and a missing quantity go through COPY's escaping.
    csv = (
        "Артикул;Наименование;Цена;Остаток\r\n"
        "A-1;Болт;1,234;\r\nA-2;Гайка\tМ8;1,234;5\r\nA\\3;Шайба \\ 8;1 234,50;7\r\n"
    ).encode("cp1251")
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    items = PriceItem.objects.filter(price_import=price_import).order_by("row_number")
    assert [(i.sku, i.name, i.price, i.quantity) for i in items] == [
        ("A-1", "Болт", Decimal("1.234"), None),
        ("A-2", "Гайка\tМ8", Decimal("1.234"), Decimal(5)),
        ("A\\3", "Шайба \\ 8", Decimal("1234.50"), Decimal(7)),
    ]


def test_repeated_skus_are_noted_and_the_diff_takes_the_last_row_either_way(mailbox, config):
    first = run_all(receive(mailbox, [("p.xlsx", price_list_xlsx(ROWS))]))[0]
    assert first.parse_info["repeated_skus"] is False
    repeated = [
        ("A-1", "Болт М8", Decimal("1.00"), 1),
        ("A-1", "Болт М8", Decimal("1234.50"), 1),  # the last A-1 counts: unchanged
        ("A-2", "Гайка М8", Decimal("2.00"), 0),  # changed
    ]
    second = run_all(receive(mailbox, [("p.xlsx", price_list_xlsx(repeated))]))[0]
    assert second.parse_info["repeated_skus"] is True
    assert (second.diff["added"], second.diff["removed"], second.diff["changed"]) == (0, 1, 1)
    third = run_all(receive(mailbox, [("p.xlsx", price_list_xlsx(ROWS))]))[0]
    # Against an import with a repeated SKU: its last A-1 row and A-2 at 2.00.
    assert (third.diff["added"], third.diff["removed"], third.diff["changed"]) == (1, 0, 1)
    assert third.diff["changed_sample"] == [{"sku": "A-2", "old": "2", "new": "1.15"}]


def test_diff_counts_are_exact_beyond_the_samples(mailbox, config):
    many = price_rows(120)
    (first,) = run_all(receive(mailbox, [("p.csv", price_list_csv(many))]))
    assert first.status == Status.SUCCEEDED, first.last_error
    changed = [(sku, name, price + 1, qty) for sku, name, price, qty in many[:70]]
    (second,) = run_all(receive(mailbox, [("p.csv", price_list_csv(changed))]))
    assert (second.diff["added"], second.diff["removed"], second.diff["changed"]) == (0, 50, 70)
    assert len(second.diff["removed_sample"]) == diff.DIFF_SAMPLE
    assert len(second.diff["changed_sample"]) == diff.DIFF_SAMPLE


@pytest.mark.usefixtures("imports_wait")
def test_an_import_reads_its_attachment_again_through_the_email_parser_if_the_digest_differs(
    mailbox, config, monkeypatch
):
    message = receive(mailbox, [("p.csv", price_list_csv(ROWS))])
    (price_import,) = message.imports.all()
    calls = []

    def wrong_part(raw, key, *, quick=True):
        calls.append(quick)
        return b"not this part" if quick else attachment_payload(raw, key, quick=False)

    monkeypatch.setattr("pricefeed.imports.source.attachment_payload", wrong_part)
    lifecycle.price_import_run(import_id=price_import.pk, worker="w")
    price_import.refresh_from_db()
    assert calls == [True, False]
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    assert price_import.rows_ok == 3


def test_the_quick_attachment_reader_agrees_with_the_email_parser():
    from email import policy
    from email.message import EmailMessage
    from email.parser import BytesParser

    data = bytes(range(256)) * 50
    msg = EmailMessage()
    msg["Subject"] = "x"
    msg.set_content("hi")
    msg.add_alternative("<b>hi</b>", subtype="html")
    msg.add_attachment(data, maintype="application", subtype="octet-stream", filename="a.bin")
    inner = EmailMessage()
    inner.set_content("forwarded")
    inner.add_attachment(b"zz", maintype="text", subtype="csv", filename="z.csv")
    msg.add_attachment(inner)
    msg.add_attachment(data[:99], maintype="application", subtype="octet-stream", filename="b")
    plain = msg.as_bytes()
    for raw in (
        plain,
        plain.replace(b"\n", b"\r\n"),
        supplier_email(attachments=[("p.csv", data), ("q.xlsx", data[::-1])]),
    ):
        parts = list(BytesParser(policy=policy.default).parsebytes(raw).walk())
        for index, part in enumerate(parts):
            expected = part.get_payload(decode=True) or b""
            assert attachment_payload(raw, f"part{index}") == expected, index


def test_rows_read_a_column_at_a_time_are_stored_exactly(mailbox, config, column_chunks):
    # The first row settles the decimal comma; tabs and backslashes in text, a missing
    # and an unreadable quantity go through the block's COPY text and its escaping.
    csv = (
        "Артикул;Наименование;Цена;Остаток\r\n"
        "A-0;Кабель;1 234,50;1\r\nA-1;Болт;0012,5;\r\nA-2;Гайка\tМ8;7;5 шт.\r\n"
        "A\\3;Шайба \\ 8;-3,25;в наличии\r\nA-4;Винт;99;2\r\n"
    ).encode("cp1251")
    # A negative price, a credit note's, is what this config allows.
    PriceListConfig.objects.filter(pk=config.pk).update(allow_nonpositive_prices=True)
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    items = PriceItem.objects.filter(price_import=price_import).order_by("row_number")
    stored = [(i.row_number, i.sku, i.name, i.price, i.currency, i.quantity) for i in items]
    assert stored == parsing.parse(csv).rows
    assert stored[3] == (5, "A\\3", "Шайба \\ 8", Decimal("-3.25"), "", None)


def test_the_same_rows_again_diff_empty_without_joining_the_imports(mailbox, config, column_chunks):
    rows = price_rows(30)
    (first,) = run_all(receive(mailbox, [("p.csv", price_list_csv(rows))]))
    with CaptureQueriesContext(connection) as queries:
        (second,) = run_all(receive(mailbox, [("p.csv", price_list_csv(rows))]))
    assert second.status == Status.SUCCEEDED, second.last_error
    assert second.parse_info["rows_digest"] == first.parse_info["rows_digest"]
    assert (second.diff["added"], second.diff["removed"], second.diff["changed"]) == (0, 0, 0)
    assert second.diff["previous_import"] == first.pk
    assert not [q for q in queries.captured_queries if "FULL JOIN" in q["sql"]]
    # The same SKUs with one price changed: another digest, and the join finds it.
    changed = [*rows[:10], (rows[10][0], rows[10][1], rows[10][2] + 1, rows[10][3]), *rows[11:]]
    (third,) = run_all(receive(mailbox, [("p.csv", price_list_csv(changed))]))
    assert third.parse_info["rows_digest"] != second.parse_info["rows_digest"]
    assert (third.diff["added"], third.diff["removed"], third.diff["changed"]) == (0, 0, 1)
    assert third.diff["changed_sample"][0]["sku"] == rows[10][0]


@pytest.mark.parametrize(
    ("chunks", "repeated"),
    [
        ([["A-1", "A-2"], ["A-3", "B-1"]], False),  # ascending: no set needed
        ([["B-1", "A-2"], ["C-1", "A-1"]], False),  # out of order, all different
        ([["A-1", "A-2"], ["A-2", "A-3"]], True),  # the same SKU across a chunk border
        ([["A-1", "A-2", "A-3"], ["A-0", "A-2"]], True),  # a repeat after the order broke
    ],
)
def test_the_item_writer_tells_repeated_skus(chunks, repeated):
    writer = storage.ItemWriter(lambda rows, ends: None, lambda block, ends: None)
    for number, skus in enumerate(chunks):
        writer([(number, sku, "", Decimal(1), "RUB", None) for sku in skus])
    assert writer.repeated_skus is repeated


def test_the_rows_digest_tells_sku_and_price_sequences_apart():
    def digest(rows) -> str:
        writer = storage.ItemWriter(lambda rows, ends: None, lambda block, ends: None)
        for chunk in rows:
            writer([(1, sku, "", Decimal(price), "", None) for sku, price in chunk])
        return writer.digest

    same = digest([[("A-1", "1.5"), ("A-2", "2")]])
    assert digest([[("A-1", "1.5")], [("A-2", "2")]]) == same  # chunking does not matter
    assert digest([[("A-1", "1.5"), ("A-2", "3")]]) != same
    assert digest([[("A-2", "2"), ("A-1", "1.5")]]) != same
    # SKUs are escaped before they are joined: a newline cannot move between them.
    assert digest([[("A\n", "1"), ("B", "1")]]) != digest([[("A", "1"), ("\nB", "1")]])


def test_a_price_too_large_to_store_is_a_row_error_not_a_failed_copy(
    mailbox, config, column_chunks
):
    config.max_bad_rows_percent = 50
    config.save()
    csv = _csv(["A-1;Болт;1,50\r\n", "A-2;Гайка;1 000 000 000 000 000;\r\n", "A-3;Шайба;2\r\n"])
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert price_import.status == Status.PARTIAL, price_import.last_error
    assert english(price_import.errors) == [
        {
            "row": 3,
            "error": "price '1 000 000 000 000 000' is out of range "
            "(at most 14 digits before the decimal point)",
        }
    ]
    assert sorted(PriceItem.objects.values_list("sku", flat=True)) == ["A-1", "A-3"]


def test_a_copy_the_server_refuses_mid_file_stores_nothing_and_fails_the_import_at_once(
    mailbox, config, column_chunks, monkeypatch
):
    # Rows go to the server while the file is read: an error there must still reach the
    # import and roll its rows back. A value the server refuses is refused again on every
    # attempt: a permanent error (a DataError), not one for the retry machinery.
    real = storage._block_copy_text
    blocks = []

    def one_bad_block(import_id, block, ends):
        blocks.append(block)
        text = real(import_id, block, ends)
        return text.replace("\t", "\tnot-a-number\t", 1) if len(blocks) == 3 else text

    monkeypatch.setattr(storage, "_block_copy_text", one_bad_block)
    csv = _csv([f"A-{i};Болт;{i},50\r\n" for i in range(20)])
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv)]))
    assert len(blocks) >= 3
    assert price_import.status == Status.FAILED
    assert price_import.attempts == 1
    assert "extra data after last expected column" in price_import.last_error
    assert "not retried" in price_import.last_error
    assert not PriceItem.objects.exists()
    # The failure is announced like any other outcome.
    (event,) = OutboxEvent.objects.filter(aggregate_id=str(price_import.pk), kind=OUTCOME_EVENT)
    assert event.payload["status"] == Status.FAILED
