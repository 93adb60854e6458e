#!/usr/bin/env python
"""Export benchmark: issue 15's bars for the CSV export and the API, and the xlsx figures.

    .venv/bin/python bench/export.py [--rows 1000000] [--rounds 3] [--quick]
                                     [--api-items 10000000] [--api-pages 300]

Works in a throwaway PostgreSQL database next to DATABASE_URL's (default: the local
server on 127.0.0.1:5432), named after it plus "_bench_export", dropped at the end. It
stores an import of ``--rows`` rows (COPY; Cyrillic names, prices with kopecks, a few
names that start like a formula) and a second import of the same config with 1% of the
prices changed, 0.5% of the rows gone and 5,000 new ones, each diffed against the
config's catalogue and made current as the import service does, then measures through
pricefeed.exports, every byte going to /dev/null:

* the config's current catalogue (about ``--rows`` items) as CSV (``;``), alternated
  ``--rounds`` times with the peer, PostgreSQL's own ``COPY (SELECT the same columns of
  the same rows in the same order) TO STDOUT (FORMAT csv)``; medians;
* the first import's rows as CSV (``;`` and ``,``) and as xlsx (openpyxl write-only into
  a temporary file, then read back as the response streams it), once each;
* the second import's diff as CSV, once;
* the API (bench/apibench.py): ``--api-items`` more items stored in the same database
  and a catalogue of a tenth of them, then ``--api-pages`` pages of 1,000 of that
  catalogue and of an import's items through Django's test client: p50 and p99.

Each export runs in a child process of its own (its peak RSS is its own, VmHWM).
``--quick``: 100,000 rows, 2 rounds, 1,000,000 API items and 100 pages.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
    production_key,
)

TARGET_ROWS_PER_S = 200_000
TARGET_RSS_MB = 150
TARGET_API_P99_MS = 50
WORDS = (
    "Кабель ВВГ-нг медный Розетка Выключатель Лампа светодиодная Автомат Щит "
    "Провод ПВС белый чёрный 3х2,5 IP44 накладной скрытый двойной"
).split()
# Names a supplier might really send that a spreadsheet would read as a formula.
FORMULA_LIKE = ("-20% скидка", "+ монтаж", "=Кабель", "@дилер")
INSERT_CHUNK = 100_000


BENCH_DB = bench_database("export")


def price_rows(count: int, seed: int, *, first_row: int = 2):
    """(row_number, sku, name, price, currency, quantity) rows, as the import stores them."""
    rnd = random.Random(seed)
    for i in range(count):
        name = " ".join(rnd.choice(WORDS) for _ in range(5))
        if rnd.random() < 0.01:
            name = rnd.choice(FORMULA_LIKE) + " " + name
        price = Decimal(rnd.randint(100, 5_000_000)) / 100
        yield (first_row + i, f"A-{i:07d}", name, price, "RUB", Decimal(rnd.randint(0, 500)))


def changed_rows(count: int, seed: int):
    """price_rows() with 1% of the prices changed, 0.5% of the rows gone and 5,000 new."""
    rnd = random.Random(seed + 1)
    row = 2
    for _, sku, name, price, currency, quantity in price_rows(count, seed):
        r = rnd.random()
        if r < 0.005:
            continue
        if r < 0.015:
            price = Decimal(rnd.randint(100, 5_000_000)) / 100
        yield (row, sku, name, price, currency, quantity)
        row += 1
    for i in range(5000):
        yield (row + i, f"Z-{i:07d}", f"Новинка {i}", Decimal("12.50"), "RUB", Decimal(1))


def store_imports(rows: int, seed: int) -> tuple[int, int]:
    """Stores the two imports (this process's Django is on the bench database); returns
    their ids, the first and the changed one."""
    import hashlib
    import itertools
    import uuid

    from django.db import transaction

    from mailboxes.models import InboundMessage, Mailbox
    from pricefeed import catalogue
    from pricefeed.imports.diff import diff
    from pricefeed.imports.storage import insert_items
    from pricefeed.models import PriceImport, PriceListConfig

    mailbox = Mailbox.objects.create(name="bench", host="localhost", username="u", password="p")
    config = PriceListConfig.objects.create(mailbox=mailbox, name="Поставщик «Ромашка»")
    ids = []
    for run, source in (("first", price_rows(rows, seed)), ("changed", changed_rows(rows, seed))):
        raw = f"Subject: {run}\r\n\r\nprices\r\n".encode()
        message = InboundMessage.objects.create(
            mailbox=mailbox,
            folder="INBOX",
            uidvalidity=1,
            uid=len(ids) + 1,
            raw=raw,
            size=len(raw),
            sha256=hashlib.sha256(raw).hexdigest(),
            dedup_key=uuid.uuid4().hex,
        )
        price_import = PriceImport.objects.create(
            message=message,
            config=config,
            attachment_key="part2",
            filename="прайс.csv",
            status=PriceImport.Status.SUCCEEDED,
            parse_info={"repeated_skus": False},
        )
        stored = 0
        while chunk := list(itertools.islice(source, INSERT_CHUNK)):
            insert_items(price_import.pk, chunk, config.pk)
            stored += len(chunk)
        price_import.rows_total = price_import.rows_ok = stored
        price_import.save()
        # As the import service does: diffed against the config's catalogue, which the
        # import's rows then become (the second's changes, added and removed rows too).
        with transaction.atomic():
            at = catalogue.config_lock(config.pk)
            rows = catalogue.StoredRows(repeated_skus=False)
            decision = catalogue.acceptance(price_import, at=at, rows=rows, unreadable=[])
            PriceImport.objects.filter(pk=price_import.pk).update(diff=diff(decision, stored))
            catalogue.catalogue_apply(decision)
        ids.append(price_import.pk)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE pricefeed_priceitem")  # the catalogue's table too
    return ids[0], ids[1]


# -- children ----------------------------------------------------------------------------


def child(kind: str, import_id: str) -> None:
    """Runs in a fresh interpreter on the bench database; prints one JSON line."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from pricefeed import exports, sql
    from pricefeed.models import PriceImport, item_key

    price_import = PriceImport.objects.select_related("config").get(pk=int(import_id))
    written = 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        if kind in ("copy", "catalogue-copy"):
            from django.db import connection

            if kind == "copy":
                query = (
                    f"COPY (SELECT {', '.join(exports.ITEM_FIELDS)} FROM {sql.ITEMS} "
                    f"WHERE id >= {item_key(price_import.pk, 0)} "
                    f"AND id < {item_key(price_import.pk + 1, 0)} ORDER BY id) "
                    f"TO STDOUT (FORMAT csv, HEADER)"
                )
            else:  # the same rows as the catalogue export, in its order
                query = (
                    f"COPY (SELECT {', '.join(exports.ITEM_FIELDS)} FROM "
                    f"pricefeed_catalogueentry WHERE config_id = {price_import.config_id} "
                    f"AND valid_to IS NULL ORDER BY sku) TO STDOUT (FORMAT csv, HEADER)"
                )
            with connection.cursor() as cursor, cursor.cursor.copy(query) as copy:
                for data in copy:
                    written += len(data)
                    sink.write(data)
        elif kind == "xlsx":
            response = exports.xlsx_response(exports.import_rows(price_import), "rows.xlsx")
            for data in response.streaming_content:
                written += len(data)
                sink.write(data)
            response.close()
        else:
            if kind == "diff-csv":
                table = exports.import_diff(price_import)
            elif kind == "catalogue-csv":
                table = exports.catalogue_rows(price_import.config)
            else:
                table = exports.import_rows(price_import)
            delimiter = "," if kind == "csv-comma" else ";"
            response = exports.csv_response(table, "rows.csv", delimiter=delimiter)
            for data in response.streaming_content:
                written += len(data)
                sink.write(data)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": usage.ru_utime + usage.ru_stime - cpu_before,
                "bytes": written,
                "peak_rss_mb": _peak_rss_mb(),
            }
        )
    )


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not getrusage's ru_maxrss: Linux carries that
    over exec from the forked copy of the parent, which holds the generated rows."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_child(url: str, kind: str, import_id: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(import_id)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"},
    )
    if done.returncode:
        sys.exit(f"the {kind} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the API's part ----------------------------------------------------------------------


def api_p99(url: str, items: int, pages: int) -> dict:
    """The API's p99 for a 1,000-item page (bench/apibench.py), on ``items`` more price
    items stored in the same database."""
    from bench.apibench import measure_api_p99

    return measure_api_p99(url, items=items, pages=pages)


# -- main --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the import")
    parser.add_argument("--rounds", type=int, default=3, help="CSV export / COPY rounds")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--api-items", type=int, default=10_000_000, help="price items the API bench stores"
    )
    parser.add_argument("--api-pages", type=int, default=300, help="API pages timed per list")
    parser.add_argument(
        "--quick", action="store_true", help="100,000 rows, 2 rounds, 1,000,000 API items"
    )
    parser.add_argument("--child", nargs=2, metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.quick:
        args.rows, args.rounds = 100_000, 2
        args.api_items, args.api_pages = 1_000_000, 100

    production_key()  # for this process and the children, which inherit it
    interrupt_on_termination()
    url = fresh_database(BENCH_DB, "bench/export.py")
    try:
        django_on(url)
        started = time.perf_counter()
        first, changed = store_imports(args.rows, args.seed)
        from pricefeed.models import PriceImport

        diff = PriceImport.objects.get(pk=changed).diff
        print(
            f"stored two imports of {args.rows:,} rows in {time.perf_counter() - started:.1f} s "
            f"(the second: {diff['added']:,} added, {diff['removed']:,} removed, "
            f"{diff['changed']:,} changed)"
        )
        current = diff["added"] + args.rows - diff["removed"]
        rounds = []
        for _ in range(args.rounds):
            rounds.append(
                (
                    run_child(url, "catalogue-csv", changed),
                    run_child(url, "catalogue-copy", changed),
                )
            )
        rows_csv = run_child(url, "csv", first)
        comma = run_child(url, "csv-comma", first)
        xlsx = run_child(url, "xlsx", first)
        diff_csv = run_child(url, "diff-csv", changed)
        api = api_p99(url, args.api_items, args.api_pages)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(BENCH_DB)

    def rate(figures: dict, rows: int = args.rows) -> float:
        return rows / figures["seconds"]

    def line(figures: dict, rows: int = args.rows) -> str:
        return (
            f"{figures['seconds']:.2f} s, {rate(figures, rows):,.0f} rows/s "
            f"({rows / figures['cpu_seconds']:,.0f} rows per CPU second of the process), "
            f"{figures['bytes'] / 2**20:.1f} MiB, peak RSS {figures['peak_rss_mb']:.0f} MB"
        )

    for i, (ours, peer) in enumerate(rounds, 1):
        print(f"round {i}: catalogue csv (;) export {line(ours, current)}")
        print(f"round {i}: COPY TO STDOUT, same rows  {line(peer, current)}")
    csv_rate = statistics.median(rate(ours, current) for ours, _ in rounds)
    copy_rate = statistics.median(rate(peer, current) for _, peer in rounds)
    csv_rss = max(ours["peak_rss_mb"] for ours, _ in rounds)
    print(
        f"catalogue ({current:,} current items) csv (;) export median {csv_rate:,.0f} rows/s; "
        f"peer COPY (SELECT … ORDER BY sku) TO STDOUT median {copy_rate:,.0f} rows/s "
        f"({copy_rate / csv_rate:.1f}x ours)"
    )
    print(f"import rows csv (;) export {line(rows_csv)}")
    print(f"csv (,) export {line(comma)}")
    print(f"xlsx export    {line(xlsx)}")
    changes = diff["added"] + diff["removed"] + diff["changed"]
    print(
        f"diff csv export ({changes:,} changes; the join of {args.rows:,} rows with the "
        f"catalogue) {diff_csv['seconds']:.2f} s, peak RSS {diff_csv['peak_rss_mb']:.0f} MB"
    )
    load = os.getloadavg()
    print(
        f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
        f"{os.cpu_count()} CPUs (the export and PostgreSQL share them: rows per CPU second "
        f"is the export's own cost)"
    )
    for name in ("catalogue", "import_items", "catalogue_as_of"):
        figures = api.get(name)
        if figures:
            print(
                f"api page of 1,000 ({name}): p50 {figures['p50_ms']:.1f} ms, "
                f"p99 {figures['p99_ms']:.1f} ms, max {figures['max_ms']:.1f} ms "
                f"(CPU p50 {figures['cpu_p50_ms']:.1f} ms, p99 {figures['cpu_p99_ms']:.1f} ms)"
            )
    print(
        f"api: {api['items']:,} more items stored, a catalogue of {api['current']:,} current; "
        f"{api['pages']} pages per list through Django's test client"
    )
    verdict = "met" if csv_rate >= TARGET_ROWS_PER_S else "missed"
    print(
        f"BAR export_csv {verdict} {csv_rate:,.0f} rows/s "
        f"(target ≥ {TARGET_ROWS_PER_S:,} rows/s for a catalogue of {current:,} items; "
        f"median of {len(rounds)})"
    )
    verdict = "met" if api["p99_ms"] <= TARGET_API_P99_MS else "missed"
    print(
        f"BAR api_page_p99 {verdict} {api['p99_ms']:.1f} ms "
        f"(target ≤ {TARGET_API_P99_MS} ms for a 1,000-item page with "
        f"{api['items'] + 2 * args.rows:,} items stored)"
    )
    verdict = "met" if csv_rss <= TARGET_RSS_MB else "missed"
    print(
        f"BAR export_csv_rss {verdict} {csv_rss:.0f} MB "
        f"(target peak RSS ≤ {TARGET_RSS_MB} MB; the worst round)"
    )


if __name__ == "__main__":
    main()
