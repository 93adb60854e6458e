"""import.finished: each import's outcome for other systems, beside the internal event."""

from __future__ import annotations

import pytest

from devkit.samples import price_list_csv
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")


def test_each_finished_import_publishes_import_finished_with_its_facts(mailbox, config):
    (done,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    (failed,) = run_all(receive(mailbox, [("q.csv", b"%PDF-1.7 not a price list")]))
    events = {e.aggregate_id: e for e in OutboxEvent.objects.filter(kind="import.finished")}
    assert set(events) == {str(done.pk), str(failed.pk)}
    assert {e.aggregate_type for e in events.values()} == {"pricefeed.priceimport"}
    done.refresh_from_db()
    assert events[str(done.pk)].payload == {
        "import_id": done.pk,
        "config_id": config.pk,
        "config_name": config.name,
        "status": PriceImport.Status.SUCCEEDED,
        "review": "",
        "accepted": True,
        "filename": "p.csv",
        "rows_total": 3,
        "rows_ok": 3,
        "rows_failed": 0,
        "rows_skipped": done.rows_skipped,
        "finished_at": done.finished_at.isoformat(),
    }
    payload = events[str(failed.pk)].payload
    assert (payload["status"], payload["accepted"]) == (PriceImport.Status.FAILED, False)
    # The internal event is published as before.
    assert OutboxEvent.objects.filter(kind="price_import.finished").count() == 2


def test_every_import_of_a_message_publishes_its_own(mailbox, config):
    imports = run_all(
        receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("b.csv", price_list_csv(ROWS))])
    )
    assert len(imports) == 2
    finished = OutboxEvent.objects.filter(kind="import.finished")
    assert sorted(finished.values_list("aggregate_id", flat=True)) == sorted(
        str(i.pk) for i in imports
    )
    # The message's outcome is still announced once, for both.
    assert OutboxEvent.objects.filter(kind="message.imports_finished").count() == 1
