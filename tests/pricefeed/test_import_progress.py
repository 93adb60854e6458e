"""A running import shows the rows it has read: written every few seconds, not per row,
on a connection of its own so that others see it while the import's transaction is
open; at the end every data row read."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.utils import translation

from devkit.samples import price_list_csv, price_rows
from devkit.servers.processes import wait_until
from pricefeed.imports import lifecycle, progress
from pricefeed.models import PriceImport, PriceItem
from pricefeed.parsing import rows as parsing_rows
from tests.factories import receive, run_all

Status = PriceImport.Status

pytestmark = pytest.mark.usefixtures("no_queue", "imports_wait")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def test_progress_is_written_once_an_interval_not_per_batch():
    clock = FakeClock()
    written: list[int] = []
    counter = progress.Progress(written.append, interval=2.0, clock=clock)
    for at in (100.5, 101.0, 101.9):
        clock.now = at
        counter.read(1000)
    assert written == []  # under one interval: nothing, however many rows
    clock.now = 102.0
    counter.read(1000)
    assert written == [4000]
    for at in (102.5, 103.0, 103.9):
        clock.now = at
        counter.read(1000)
    assert written == [4000]
    clock.now = 104.0
    counter.read(500)
    assert written == [4000, 7500]
    assert counter.rows == 7500
    assert clock.reads == 1 + 8  # once when made, once per batch: never per row


def test_an_interval_of_zero_writes_nothing_and_never_reads_the_clock():
    clock = FakeClock()
    written: list[int] = []
    counter = progress.Progress(written.append, interval=0, clock=clock)
    clock.now = 10_000.0
    counter.read(123)
    assert (written, counter.rows, clock.reads) == ([], 123, 0)


def test_a_long_parse_hands_progress_its_rows_batch_by_batch(
    mailbox, config, monkeypatch, settings
):
    """Through the import itself: the sink tells progress each batch, the clock is read
    once per batch, and the count grows to the file's rows."""
    monkeypatch.setattr(parsing_rows, "TEXT_CHUNK", 100)
    monkeypatch.setattr(parsing_rows, "SINK_CHUNK", 100)
    counts: list[int] = []
    monkeypatch.setattr(progress.ProgressWriter, "__call__", lambda self, n: counts.append(n))
    clock = FakeClock()
    monkeypatch.setattr(progress, "_now", clock)
    settings.PRICEFEED_IMPORT_PROGRESS_INTERVAL = 2.0

    batches: list[int] = []  # rows read after each batch

    def tick(self, rows, read=progress.Progress.read):
        clock.now += 1.0  # every batch takes a second on this clock
        read(self, rows)
        batches.append(self.rows)

    monkeypatch.setattr(progress.Progress, "read", tick)
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(price_rows(1000)))]))
    assert price_import.status == Status.SUCCEEDED
    assert price_import.rows_read == price_import.rows_total == 1000
    # Batches of about 100 rows, one second each: a write every second batch.
    assert len(batches) >= 10
    assert counts == batches[1::2]
    assert clock.reads == 1 + len(batches)


def test_a_finished_import_counts_every_data_row_read_failed_ones_too(mailbox, config):
    rows = price_rows(30)
    lines = price_list_csv(rows).decode("cp1251").splitlines()
    lines[5] = "A-bad;Болт;по запросу;1"
    (price_import,) = run_all(receive(mailbox, [("p.csv", "\r\n".join(lines).encode("cp1251"))]))
    assert price_import.status == Status.PARTIAL
    assert (price_import.rows_read, price_import.rows_total, price_import.rows_failed) == (
        30,
        30,
        1,
    )


def test_a_parse_stopped_part_way_keeps_how_far_it_read(mailbox, config, settings, monkeypatch):
    monkeypatch.setattr(parsing_rows, "SINK_CHUNK", 2)
    settings.PRICEFEED_PARSE_MAX_ROWS = 5
    csv = "Артикул;Наименование;Цена\r\n" + "".join(f"A-{i};Болт;{i},50\r\n" for i in range(12))
    (price_import,) = run_all(receive(mailbox, [("p.csv", csv.encode())]))
    assert price_import.status == Status.FAILED
    assert "more than 5 data rows" in price_import.last_error
    assert 0 < price_import.rows_read <= 5
    assert not PriceItem.objects.exists()


def test_every_run_counts_from_zero(mailbox, config, monkeypatch):
    message = receive(mailbox, [("p.csv", price_list_csv(price_rows(3)))])
    price_import = message.imports.get()
    PriceImport.objects.filter(pk=price_import.pk).update(rows_read=99)
    seen: list[int] = []

    def broken(claimed: PriceImport):
        seen.append(PriceImport.objects.get(pk=claimed.pk).rows_read)
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(lifecycle, "import_file", broken)
    assert lifecycle.price_import_run(import_id=price_import.pk, worker="w") == Status.PENDING
    assert seen == [0]


@pytest.mark.parametrize(
    ("status", "rows", "shown"),
    [
        (Status.PENDING, 0, ""),
        (Status.RUNNING, 12345, "12,345 rows read so far"),
        (Status.RUNNING, 1, "1 row read so far"),
        (Status.PARTIAL, 2000, "2,000 rows read"),
    ],
)
def test_the_progress_people_see(status, rows, shown):
    with translation.override("en"):
        assert PriceImport(status=status, rows_read=rows).progress_display() == shown


@pytest.mark.django_db(transaction=True)
def test_progress_writes_only_to_a_running_import_claimed_by_this_worker(mailbox, config):
    message = receive(mailbox, [("p.csv", price_list_csv(price_rows(3)))])
    price_import = message.imports.get()
    assert lifecycle.IMPORT_WORK.claim(pk=price_import.pk, worker="w1")
    writer = progress.ProgressWriter(import_id=price_import.pk, worker="w2")
    try:
        writer(7)
        assert PriceImport.objects.get(pk=price_import.pk).rows_read == 0
        writer.worker = "w1"
        writer(8)
        assert PriceImport.objects.get(pk=price_import.pk).rows_read == 8
        PriceImport.objects.filter(pk=price_import.pk).update(status=Status.SUCCEEDED)
        writer(9)
        assert PriceImport.objects.get(pk=price_import.pk).rows_read == 8
        assert writer.writes == 3  # each a statement that found no row, or one
    finally:
        writer.close()


@pytest.mark.django_db(transaction=True)
def test_another_connection_sees_rows_read_grow_while_the_import_runs(
    mailbox, config, monkeypatch, settings
):
    """The import's rows go in one open transaction; its progress is seen from outside
    it all the same. Every batch of rows makes a write here (the clock moves an interval
    per read), and the import waits after each write until the test has looked."""
    total = 10_000
    monkeypatch.setattr(parsing_rows, "TEXT_CHUNK", 1000)
    monkeypatch.setattr(parsing_rows, "SINK_CHUNK", 1000)
    settings.PRICEFEED_IMPORT_PROGRESS_INTERVAL = 2.0
    clock = FakeClock()

    def moving() -> float:
        clock.now += 2.0
        return clock.now

    monkeypatch.setattr(progress, "_now", moving)
    written: list[int] = []
    looked = threading.Semaphore(0)
    write = progress.ProgressWriter.__call__

    def write_then_wait(self, rows: int) -> None:
        write(self, rows)
        written.append(rows)
        assert looked.acquire(timeout=60), "the test never looked"

    monkeypatch.setattr(progress.ProgressWriter, "__call__", write_then_wait)
    message = receive(mailbox, [("big.csv", price_list_csv(price_rows(total)))])
    price_import = message.imports.get()
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(lifecycle.price_import_run(import_id=price_import.pk, worker="w"))
        except BaseException as exc:
            outcome.append(exc)
        finally:
            connection.close()  # this thread's own

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    seen: list[int] = []
    try:
        for _ in range(2):
            # Polled from this test's connection until it shows a value the import has
            # not reached at its end, and more than the last one seen.
            def grown() -> bool:
                value = PriceImport.objects.get(pk=price_import.pk).rows_read
                if 0 < value < total and (not seen or value > seen[-1]):
                    seen.append(value)
                    return True
                return False

            wait_until(grown, 60, "rows_read grows while the import runs")
            running = PriceImport.objects.get(pk=price_import.pk)
            assert running.status == Status.RUNNING
            # The rows are in the import's open transaction, not yet seen from here.
            assert not PriceItem.objects.of_import(price_import.pk).exists()
            looked.release()
    finally:
        for _ in range(total):
            looked.release()  # let the import run to its end whatever happened
        worker.join(60)  # a liveness bound, not a timing
    assert not worker.is_alive()
    assert outcome == [Status.SUCCEEDED]
    assert seen == written[:2]
    finished = PriceImport.objects.get(pk=price_import.pk)
    assert finished.rows_read == finished.rows_total == total
    assert PriceItem.objects.of_import(price_import.pk).count() == total


def test_a_progress_write_that_fails_is_logged_and_the_import_goes_on(
    mailbox, config, monkeypatch, settings, caplog
):
    monkeypatch.setattr(parsing_rows, "TEXT_CHUNK", 100)
    monkeypatch.setattr(parsing_rows, "SINK_CHUNK", 100)
    clock = FakeClock()

    def moving() -> float:
        clock.now += 2.0
        return clock.now

    monkeypatch.setattr(progress, "_now", moving)
    monkeypatch.setattr(progress, "_update_sql", lambda db: "UPDATE no_such_table SET x = %s")
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(price_rows(1000)))]))
    assert price_import.status == Status.SUCCEEDED
    assert price_import.rows_read == 1000
    failures = [r for r in caplog.records if r.getMessage().startswith("import progress not")]
    assert len(failures) == 1  # the first failure ends the progress writes of the run
