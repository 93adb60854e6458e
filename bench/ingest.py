#!/usr/bin/env python
"""Ingestion benchmark against a private Dovecot: latency and burst throughput.

    .venv/bin/python bench/ingest.py [--latency 200] [--burst 1000]

Uses DATABASE_URL (PostgreSQL) or the local server on 127.0.0.1:5432; works in its own
database ``pricefeed_bench`` (dropped and created). Starts Dovecot and a real
``manage.py listen_mail`` process, then measures:

* latency: APPEND returning → InboundMessage committed (visible to another connection),
  one message at a time, so every message is its own IDLE wake-up. Dovecot itself waits
  500 ms before it tells an idling client (NOTIFY_DELAY_MSECS), which is the floor.
* burst: N messages appended as fast as one connection can; time from the first APPEND
  until all N are committed, and msg/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import django_on, fresh_database  # noqa: E402

BENCH_DB = "pricefeed_bench"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=int, default=200, help="messages, one at a time")
    parser.add_argument("--burst", type=int, default=1000, help="messages appended at once")
    args = parser.parse_args()

    bench_url = fresh_database(BENCH_DB, "bench/ingest.py")
    django_on(bench_url)
    from django.db import close_old_connections

    from devkit.samples import price_list_csv, price_rows, supplier_email
    from devkit.servers import ImapAppender
    from devkit.servers.dovecot import DovecotServer
    from devkit.servers.processes import ManagedProcess, wait_until
    from mailboxes.models import InboundMessage, Mailbox
    from pricefeed.models import PriceListConfig

    dovecot = DovecotServer()
    dovecot.start()
    listener = None
    try:
        mailbox = Mailbox.objects.create(
            name="bench",
            host=dovecot.host,
            port=dovecot.port,
            security="plain",
            username="pricefeed",
            password="secret",
        )
        PriceListConfig.objects.create(
            mailbox=mailbox, name="bench", sender_pattern="*@acme.test", filename_pattern="*.csv"
        )
        env = {
            **os.environ,
            "DATABASE_URL": bench_url,
            "LOG_LEVEL": "WARNING",
            # No workers run here, so nothing recorded ever finishes: lift admission
            # control's bound, this measures how fast the listener records.
            "PRICEFEED_MAX_IN_FLIGHT": "1000000",
            "PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX": "1000000",
        }
        listener = ManagedProcess("listen_mail", ["listen_mail"], env, Path("/tmp")).start()
        wait_until(lambda: mailbox.checkpoints.exists(), 30, "listener connected")
        attachment = price_list_csv(price_rows(50))
        appender = ImapAppender(dovecot.host, dovecot.port, "pricefeed", "secret").open()

        # -- latency ---------------------------------------------------------------------
        latencies = []
        time.sleep(1.0)  # the listener is in IDLE
        for i in range(args.latency):
            raw = supplier_email(
                subject=f"latency {i}",
                message_id=f"<lat-{i}@acme.test>",
                attachments=[("price.csv", attachment)],
            )
            appender.append(raw)
            appended = time.perf_counter()
            message_id = f"<lat-{i}@acme.test>"
            while True:
                close_old_connections()
                if InboundMessage.objects.filter(message_id=message_id).exists():
                    break
                time.sleep(0.002)
            latencies.append(time.perf_counter() - appended)
        print(f"latency over {len(latencies)} messages (APPEND returned -> committed):")
        for q in (50, 95, 99):
            print(f"  p{q}: {percentile(latencies, q) * 1000:.0f} ms")
        print(
            f"  min {min(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms, "
            f"mean {statistics.mean(latencies) * 1000:.0f} ms"
        )

        # -- burst -----------------------------------------------------------------------
        before = InboundMessage.objects.count()
        messages = [
            supplier_email(subject=f"burst {i}", attachments=[("price.csv", attachment)])
            for i in range(args.burst)
        ]
        start = time.perf_counter()
        for raw in messages:
            appender.append(raw)
        appended = time.perf_counter() - start
        wait_until(
            lambda: InboundMessage.objects.count() - before >= args.burst,
            300,
            "burst recorded",
            interval=0.01,
        )
        elapsed = time.perf_counter() - start
        recorded = InboundMessage.objects.count() - before
        print(f"burst of {args.burst} messages ({len(messages[0])} bytes each):")
        print(f"  appended in {appended:.2f} s ({args.burst / appended:.0f} msg/s, one connection)")
        print(
            f"  all recorded {elapsed:.2f} s after the first APPEND: {recorded / elapsed:.0f} msg/s"
        )
        duplicates = recorded - args.burst
        print(f"  recorded {recorded}, duplicates {duplicates}")
        appender.close()
    finally:
        if listener is not None:
            listener.stop()
        dovecot.cleanup()


if __name__ == "__main__":
    main()
