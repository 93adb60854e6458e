"""A message's workbooks share one cell budget (PRICEFEED_MESSAGE_PARSE_CELLS): each
import is charged the cells its workbook's guard measured, before the reader opens it,
so a message of a hundred files cannot make the reader hold a hundred files' spans
(issue 30). A run replaces its own import's charge: a retry is never charged twice."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction
from django.utils import translation

from core import texts
from core.exceptions import ClaimLost
from devkit.samples import price_list_csv
from mailboxes.models import InboundMessage
from pricefeed import parsing
from pricefeed.imports.lifecycle import (
    charge_cells,
    price_import_run,
    price_imports_requeue,
)
from pricefeed.limits import parse_limits
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive
from tests.parsing.builders import xlsx

pytestmark = [pytest.mark.usefixtures("no_queue")]

Status = PriceImport.Status


def workbook(rows: int) -> bytes:
    return xlsx([["Артикул", "Цена"], *[[f"A-{i}", 10 + i] for i in range(rows)]])


def span(data: bytes) -> int:
    return parsing.check_file(data, parse_limits()).cells


def reason(price_import: PriceImport) -> str:
    """The import's reason as a Russian reader sees it."""
    with translation.override("ru"):
        return texts.shown(price_import, "last_error")


@pytest.mark.django_db
def test_the_file_past_what_its_message_has_left_fails_unread_with_the_reason(
    mailbox, config, settings
):
    small, big = workbook(3), workbook(40)
    names = ["a.xlsx", "big.xlsx", "b.xlsx", "c.xlsx"]
    files = dict(zip(names, [small, big, small, small], strict=True))
    # The three small files fit, the big one does not, whichever order they run in.
    budget = settings.PRICEFEED_MESSAGE_PARSE_CELLS = 3 * span(small)
    assert span(big) > budget

    message = receive(mailbox, list(files.items()))
    imports = {i.filename: i for i in message.imports.all()}
    refused = imports.pop("big.xlsx")

    assert {(i.status, i.cells_charged) for i in imports.values()} == {
        (Status.SUCCEEDED, span(small))
    }
    assert (refused.status, refused.cells_charged, refused.rows_total) == (Status.FAILED, 0, 0)
    spent = [f"{n * span(small):,}" for n in range(4)]  # the small files it ran after
    assert refused.last_error in [
        f"this file spans {span(big):,} cells and the other files of this message {cells}, "
        f"more than one message may span (PRICEFEED_MESSAGE_PARSE_CELLS, {budget:,}): "
        "this file was not read"
        for cells in spent
    ]
    assert "PRICEFEED_MESSAGE_PARSE_CELLS" in reason(refused)
    assert "этот файл не прочитан" in reason(refused)
    message.refresh_from_db()
    assert message.status == InboundMessage.Status.DONE


@pytest.mark.django_db
def test_a_retried_import_replaces_its_charge_instead_of_adding_to_it(mailbox, config, settings):
    data = workbook(3)
    settings.PRICEFEED_MESSAGE_PARSE_CELLS = 2 * span(data)
    message = receive(mailbox, [("a.xlsx", data), ("b.xlsx", data)])
    first, second = message.imports.order_by("pk")
    assert first.status == second.status == Status.SUCCEEDED

    # The first is claimed again (a retry after an error, by another worker): with its
    # own charge counted twice, the message would be over its budget.
    running(first, "w2")
    charge_cells(first, "w2", span(data))

    charged = list(message.imports.order_by("pk").values_list("cells_charged", flat=True))
    assert charged == [span(data), span(data)]


@pytest.mark.django_db
def test_a_requeued_import_is_charged_once(mailbox, config, settings):
    unreadable = xlsx([["Артикул", "Цена"], *[[f"A-{i}", "нет"] for i in range(3)]])
    readable = workbook(3)
    assert span(unreadable) == span(readable)
    settings.PRICEFEED_MESSAGE_PARSE_CELLS = 2 * span(readable)
    message = receive(mailbox, [("a.xlsx", unreadable), ("b.xlsx", readable)])
    failed = message.imports.order_by("pk").first()
    assert (failed.status, failed.cells_charged) == (Status.FAILED, span(unreadable))
    assert failed.last_error.startswith("no valid price rows")

    assert price_imports_requeue(import_ids=[failed.pk]) == 1
    price_import_run(import_id=failed.pk, worker="w")

    failed.refresh_from_db()
    assert failed.last_error.startswith("no valid price rows")  # read again, not refused
    charged = list(message.imports.order_by("pk").values_list("cells_charged", flat=True))
    assert charged == [span(unreadable), span(readable)]


@pytest.mark.django_db
def test_a_text_table_is_charged_nothing(mailbox, config, settings):
    settings.PRICEFEED_MESSAGE_PARSE_CELLS = 1
    message = receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("b.csv", price_list_csv(ROWS))])

    assert list(message.imports.values_list("status", "cells_charged")) == [
        (Status.SUCCEEDED, 0),
        (Status.SUCCEEDED, 0),
    ]


@pytest.mark.django_db
def test_an_import_no_longer_claimed_is_not_charged(mailbox, config, settings):
    data = workbook(3)
    message = receive(mailbox, [("a.xlsx", data)])
    price_import = message.imports.get()

    with pytest.raises(ClaimLost):  # its run is over: nothing of it is to be charged
        charge_cells(price_import, "w", span(data))
    price_import.refresh_from_db()
    assert price_import.cells_charged == span(data)  # its finished run's charge stays


def running(price_import: PriceImport, worker: str) -> None:
    PriceImport.objects.filter(pk=price_import.pk).update(
        status=Status.RUNNING, claimed_by=worker, cells_charged=0
    )


def wait_for_lock_waiters(count: int, outcomes: dict, timeout: float = 60.0) -> None:
    """Polls until ``count`` sessions of this database wait on a lock (on this test's
    connection, inside its transaction: devkit's wait_until would close it); fails at
    once when a charge ends without waiting."""
    deadline = time.monotonic() + timeout
    while True:
        with connection.cursor() as cursor:
            # The activity view is read once per transaction unless its snapshot is
            # cleared, and this one runs inside the test's transaction.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0] >= count:
                return
        assert not outcomes, outcomes  # a charge that did not wait for the lock
        assert time.monotonic() < deadline, f"{count} sessions never waited on a lock"
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_two_workers_charging_at_once_cannot_both_take_the_last_cells(mailbox, config, settings):
    data = workbook(3)
    cells = span(data)
    settings.PRICEFEED_MESSAGE_PARSE_CELLS = cells  # one of the two fits
    message = receive(mailbox, [("a.xlsx", data), ("b.xlsx", data)])
    imports = list(message.imports.order_by("pk"))
    for i, price_import in enumerate(imports):
        running(price_import, f"w{i}")
    outcomes: dict[int, str] = {}

    def charge(i: int) -> None:
        try:
            charge_cells(imports[i], f"w{i}", cells)
            outcomes[i] = "charged"
        except parsing.WorkbookRefused:
            outcomes[i] = "refused"
        except BaseException as exc:
            outcomes[i] = repr(exc)
            raise
        finally:
            connections.close_all()

    threads = [threading.Thread(target=charge, args=(i,)) for i in range(2)]
    # Both workers reach the message's lock while this test holds it, then go at once.
    with transaction.atomic():
        InboundMessage.objects.select_for_update().get(pk=message.pk)
        for thread in threads:
            thread.start()
        wait_for_lock_waiters(2, outcomes)
    for thread in threads:
        thread.join(60)

    assert sorted(outcomes.values()) == ["charged", "refused"]
    charged = sum(message.imports.values_list("cells_charged", flat=True))
    assert charged == cells
