"""Errors no retry can mend end an import FAILED on its first attempt, with the reason;
the database connection stays usable for the next import."""

from __future__ import annotations

import pytest

from devkit.samples import price_list_csv
from outbox.models import OutboxEvent
from pricefeed.imports import lifecycle, storage
from pricefeed.imports.outcome import OUTCOME_EVENT
from pricefeed.models import PriceImport, PriceItem
from tests.factories import ROWS, receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue")


def test_a_value_the_database_refuses_fails_the_import_at_once_and_the_next_one_runs(
    mailbox, config, monkeypatch
):
    # A SKU longer than its column (255) reaches the COPY: whatever the parser lets
    # through, the database has the last word.
    refuse = [True]

    def with_a_long_sku(make_text):
        def make(import_id, rows, ends):
            text = make_text(import_id, rows, ends)
            if not refuse[0]:
                return text
            first, newline, rest = text.partition("\n")
            fields = first.split("\t")
            fields[3] = "X" * 300
            return "\t".join(fields) + newline + rest

        return make

    monkeypatch.setattr(storage, "_copy_text", with_a_long_sku(storage._copy_text))
    monkeypatch.setattr(storage, "_block_copy_text", with_a_long_sku(storage._block_copy_text))

    (refused,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))

    assert (refused.status, refused.attempts) == (Status.FAILED, 1)
    assert refused.last_error.startswith("DataError: value too long")
    assert "not retried" in refused.last_error
    assert not PriceItem.objects.exists()
    (event,) = OutboxEvent.objects.filter(aggregate_id=str(refused.pk), kind=OUTCOME_EVENT)
    assert event.payload["status"] == Status.FAILED
    # The failed COPY was rolled back with its transaction: the same connection imports on.
    refuse[0] = False
    (good,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    assert good.status == Status.SUCCEEDED, good.last_error
    assert PriceItem.objects.count() == len(ROWS)


@pytest.mark.parametrize(
    "error", [RecursionError("maximum recursion depth exceeded"), MemoryError()]
)
def test_a_reader_out_of_stack_or_memory_fails_the_import_at_once(
    mailbox, config, monkeypatch, error
):
    def parse(*args, **kwargs):
        raise error

    monkeypatch.setattr(lifecycle.parsing, "parse", parse)

    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))

    assert (price_import.status, price_import.attempts) == (Status.FAILED, 1)
    assert price_import.last_error.startswith(type(error).__name__)
    assert OutboxEvent.objects.filter(aggregate_id=str(price_import.pk)).exists()


def test_a_file_that_cannot_be_parsed_fails_at_once_without_a_retry(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.csv", b"\x00\x01\x02 not a price list")]))

    assert (price_import.status, price_import.attempts) == (Status.FAILED, 1)
    assert price_import.next_attempt_at is None
    assert "unsupported format" in price_import.last_error
