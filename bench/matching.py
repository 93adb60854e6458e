#!/usr/bin/env python
"""Matching benchmark: issue 31's bar for linking supplier lines to our products.

    .venv/bin/python bench/matching.py [--products 1000000] [--lines 100000]
                                       [--rounds 3] [--trgm-lines 20] [--seed 31]
                                       [--quick] [--keep]

Works in a throwaway PostgreSQL database next to DATABASE_URL's (default: the local
server on 127.0.0.1:5432), named after it plus "_bench_matching", dropped at the end
(also on an error, Ctrl-C or SIGTERM) unless ``--keep``. From a fixed seed
(devkit.catalogue_set's families, each product with a series code of its own, as a
catalogue of a million has):

* ``--products`` products COPYed into our catalogue, and their matching keys made
  (products.keys.keys_refresh; timed, for reference), then a CHECKPOINT;
* ``--lines`` supplier lines stored as one config's current catalogue (an accepted
  import's items): four in five our products written the supplier's way (half with a
  barcode, some with the maker's article, brands missing, look-alike letters, sizes
  spelled otherwise, words reordered), the rest decoys and products we do not carry;
* ``--rounds`` rounds, each of (the links the round before wrote truncated, then a
  CHECKPOINT):

  - the whole cascade on the lines, as the outbox handler runs it (products.linking
    .links_match: keys refreshed, lines read and normalised, candidates found, decided,
    links, events and candidates written, committed; as PRICEFEED_MATCH_PARTS parts
    side by side), in a process of its own started for it as in a worker (this one
    holds the million products it generated): lines per second, and the CPU it used;
  - beside it, a plain pg_trgm similarity join of ``--trgm-lines`` of the same lines'
    normalised names against every product's (``%`` through the GIN trigram index, the
    best per line): lines per second, for reference;

  the machine is shared and noisy: the medians of the rounds are the figures, the
  cascade's the BAR line;
* the precision of the automatic links and the share of true matches linked or
  proposed first, from the lines' truth.

``--quick``: 50,000 products, 5,000 lines (the test suite's smoke pass; the figures are
then indicative only).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.benchdb import (
    bar_line,
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
    machine_busy,
    process_cpu,
    production_key,
)

BENCH_DB = bench_database("matching")
TARGET_LINES_PER_S = 20_000


def _series(rng: random.Random) -> str:
    letters = "ABCDEHKMPTX"
    return f"{rng.choice(letters)}{rng.choice(letters)}-{rng.randrange(10_000):04d}"


def make_data(products: int, lines: int, seed: int):
    """Our products (own_code, name, brand, article, barcode) and the supplier lines
    (sku, name, brand, article, barcodes, truth own code or "")."""
    from devkit import catalogue_set as cs

    rng = random.Random(seed)
    specs = cs._families(rng)
    ours = []
    seen_names: set[str] = set()
    barcodes: set[str] = set()
    while len(ours) < products:
        spec = next(specs)
        series = _series(rng)
        name = f"{cs.render(spec)} {series}"
        if name in seen_names:
            continue
        seen_names.add(name)
        barcode = cs.ean13(rng)
        while barcode in barcodes:
            barcode = cs.ean13(rng)
        barcodes.add(barcode)
        ours.append(
            (f"P{len(ours):07d}", name, spec.brand, cs._article(rng), barcode, spec, series)
        )
    supplier = []
    for i, (own, _, brand, article, barcode, spec, series) in enumerate(
        rng.sample(ours, int(lines * 0.8))
    ):
        style = rng.randrange(1, 7)
        name = f"{cs.render(spec, style, rng)} {series.lower() if rng.random() < 0.2 else series}"
        supplier.append(
            (
                f"L{i:07d}",
                name,
                brand if rng.random() < 0.7 else "",
                cs._article_variant(article, rng) if rng.random() < 0.4 else "",
                [barcode] if rng.random() < 0.5 else [],
                own,
            )
        )
    while len(supplier) < lines:
        spec = next(specs)
        if rng.random() < 0.5:
            spec = cs._decoy(spec, rng)
        name = f"{cs.render(spec, rng.randrange(1, 7), rng)} {_series(rng)}"
        if name in seen_names:
            continue
        supplier.append((f"L{len(supplier):07d}", name, spec.brand, "", [], ""))
    rng.shuffle(supplier)
    return [row[:5] for row in ours], supplier


def load(products, lines) -> tuple[int, int]:
    """Our products COPYed in, the lines as a config's current catalogue; returns the
    config and import ids."""
    import hashlib
    import uuid

    from django.db import connection, transaction
    from django.utils import timezone

    from mailboxes.models import InboundMessage, Mailbox
    from pricefeed.models import PriceImport, PriceListConfig, item_key

    mailbox = Mailbox.objects.create(name="bench", host="localhost", username="u", password="p")
    config = PriceListConfig.objects.create(mailbox=mailbox, name="Поставщик")
    raw = b"Subject: prices\r\n\r\nprices\r\n"
    message = InboundMessage.objects.create(
        mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1, raw=raw, size=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(), dedup_key=uuid.uuid4().hex,
    )  # fmt: skip
    now = timezone.now()
    price_import = PriceImport.objects.create(
        message=message, config=config, attachment_key="part2", filename="прайс.xlsx",
        status=PriceImport.Status.SUCCEEDED, accepted_at=now,
    )  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY products_product (own_code, name, brand, article, barcodes, unit, category) "
            "FROM STDIN"
        ) as copy:
            for own, name, brand, article, barcode in products:
                copy.write_row((own, name, brand, article, [barcode], "шт", ""))
        with cursor.cursor.copy(
            "COPY pricefeed_priceitem (id, price_import_id, row_number, sku, name, brand, "
            "article, barcodes, config_id, valid_from, currency) FROM STDIN"
        ) as copy:
            for n, (sku, name, brand, article, barcodes, _) in enumerate(lines, start=1):
                copy.write_row(
                    (item_key(price_import.pk, n), price_import.pk, n, sku, name, brand,
                     article, barcodes, config.pk, now, "RUB")
                )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE products_product")
        cursor.execute("VACUUM ANALYZE pricefeed_priceitem")
    return config.pk, price_import.pk


def trgm_join(lines: list[str]) -> float:
    """Seconds a plain pg_trgm similarity join of these normalised names against every
    product's takes (the best product per line, through the GIN trigram index)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE t_line (n int, name_key text) ON COMMIT DROP")
        with cursor.cursor.copy("COPY t_line FROM STDIN") as copy:
            for n, name in enumerate(lines):
                copy.write_row((n, name))
        cursor.execute("ANALYZE t_line")
        started = time.perf_counter()
        cursor.execute(
            """
            SELECT l.n, best.product_id, best.s FROM t_line l
            CROSS JOIN LATERAL (
              SELECT k.product_id, similarity(k.name_key, l.name_key) AS s
                FROM products_productkey k WHERE k.name_key % l.name_key
               ORDER BY s DESC LIMIT 1) best
            """
        )
        cursor.fetchall()
        return time.perf_counter() - started


def figures(config_id: int, lines) -> tuple[float, float, int]:
    """Precision of the automatic links, share of true matches linked or proposed
    first, and the number of automatic links."""
    from products.models import LinkCandidate, SupplierLink

    own = dict(
        SupplierLink.objects.filter(config_id=config_id).values_list(
            "supplier_sku", "product__own_code"
        )
    )
    auto = set(
        SupplierLink.objects.filter(config_id=config_id, state="auto").values_list(
            "supplier_sku", flat=True
        )
    )
    first = dict(
        LinkCandidate.objects.filter(config_id=config_id, rank=1).values_list(
            "supplier_sku", "product__own_code"
        )
    )
    right = sum(1 for sku, *_, truth in lines if sku in auto and own[sku] == truth)
    true = [(sku, truth) for sku, *_, truth in lines if truth]
    found = sum(1 for sku, truth in true if own.get(sku, first.get(sku)) == truth)
    return right / max(len(auto), 1), found / max(len(true), 1), len(auto)


def cascade(url: str, config_id: int, import_id: int):
    """The cascade for the import, timed, in this process (started for it: Django set up
    before the clock starts, as in a worker); (seconds, products.linking.Outcome, the CPU
    seconds of this process and the parts it forked, the machine's busy CPU seconds or
    None) over the same span."""
    django_on(url)
    from products import linking

    cpu, busy = process_cpu(), machine_busy()
    started = time.perf_counter()
    outcome = linking.links_match(config_id=config_id, import_id=import_id)
    took = time.perf_counter() - started
    busy_after = machine_busy()
    busy = None if busy is None or busy_after is None else busy_after - busy
    return took, outcome, process_cpu() - cpu, busy


def cascade_apart(url: str, config_id: int, import_id: int):
    """cascade() in a process of its own, started for it, as a worker runs it: this one
    holds the million products it generated (~1 GB), and the parts forked from it copied
    its pages as they wrote (a 100k-line cascade 0.4-0.6 s slower; docs/benchmarks.md)."""
    spawned = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawned) as process:
        return process.submit(cascade, url, config_id, import_id).result()


def cascade_report(number: int, took: float, outcome, cpu: float, busy: float | None) -> str:
    """A round's lines about the cascade: what it did, and the CPU it used. The same work
    takes more or less CPU as the machine's neighbours let it: the CPU tells a slow
    machine from a slow cascade."""
    from django.conf import settings

    stages = ", ".join(f"{stage} {s:.2f}" for stage, s in outcome.seconds.items())
    cores = os.cpu_count() or 1
    machine = (
        ""
        if busy is None
        else f", {busy:.2f} s the whole machine's ({busy / took / cores:.0%} of its {cores} "
        "cores; besides the parts, mostly PostgreSQL)"
    )
    return (
        f"round {number}: cascade: {outcome.lines:,} lines in {took:.2f} s "
        f"({outcome.lines / took:,.0f} lines/s): {outcome.linked:,} linked "
        f"({outcome.by_kind}), {outcome.proposed:,} proposed, {outcome.unlinked:,} unlinked; "
        f"{settings.PRICEFEED_MATCH_PARTS} parts, seconds per stage summed over them: "
        f"{stages}\n"
        f"round {number}: cascade CPU: {cpu:.2f} s in its processes (the parts' Python and "
        f"their clients){machine}; not a BAR"
    )


def links_cleared() -> None:
    """The links, their events and candidates the cascade wrote, gone (the lines are
    then as the round before found them), and the writes flushed."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE products_supplierlink, products_linkevent, products_linkcandidate")
        cursor.execute("CHECKPOINT")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--products", type=int, default=1_000_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--trgm-lines", type=int, default=20, help="per round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="of the cascade and the join, alternated"
    )
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--quick", action="store_true", help="50,000 products, 5,000 lines")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()
    if args.rounds < 1 or args.trgm_lines < 1:
        parser.error("--rounds and --trgm-lines must be at least 1")
    if args.quick:
        args.products, args.lines = 50_000, 5_000

    production_key()
    interrupt_on_termination()
    url = fresh_database(BENCH_DB, "bench/matching.py")
    try:
        django_on(url)
        started = time.perf_counter()
        products, lines = make_data(args.products, args.lines, args.seed)
        print(
            f"generated {len(products):,} products and {len(lines):,} lines in "
            f"{time.perf_counter() - started:.1f} s"
        )
        started = time.perf_counter()
        config_id, import_id = load(products, lines)
        print(f"stored them in {time.perf_counter() - started:.1f} s")
        del products

        from django.db import connection

        from products import keys, linking

        started = time.perf_counter()
        keyed = keys.keys_refresh()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE products_productkey")
            cursor.execute("VACUUM ANALYZE products_matchtoken")
        took = time.perf_counter() - started
        print(f"keys of {keyed:,} products made in {took:.1f} s ({keyed / took:,.0f}/s); not a BAR")
        # The keys' gigabytes of writes flushed before the cascade is timed: a matching
        # does not follow the making of a million keys, and the flush slowed it by ~10 %.
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")

        sample = [linking.all_lines([line[:5]])[0].name_key for line in lines[: args.trgm_lines]]
        rates, trgm_rates = [], []
        for number in range(1, args.rounds + 1):
            if number > 1:
                links_cleared()
            took, outcome, cpu, busy = cascade_apart(url, config_id, import_id)
            rates.append(outcome.lines / took)
            print(cascade_report(number, took, outcome, cpu, busy))
            took = trgm_join(sample)
            trgm_rates.append(len(sample) / took)
            print(
                f"round {number}: plain pg_trgm similarity join: {len(sample):,} lines in "
                f"{took:.2f} s ({trgm_rates[-1]:,.1f} lines/s); not a BAR"
            )
        rate, trgm_rate = statistics.median(rates), statistics.median(trgm_rates)
        print(
            f"medians of {args.rounds} rounds: cascade {rate:,.0f} lines/s (rounds: "
            + ", ".join(f"{r:,.0f}" for r in rates)
            + f"), plain pg_trgm similarity join {trgm_rate:,.1f} lines/s; the cascade is "
            f"{rate / trgm_rate:,.0f}x that"
        )
        precision, recall, auto = figures(config_id, lines)
        print(
            f"automatic links {auto:,}: precision {precision:.2%}; true matches linked or "
            f"proposed first {recall:.2%}; not a BAR"
        )
        print(
            bar_line(
                "matching_lines_per_second",
                rate >= TARGET_LINES_PER_S,
                f"{rate:,.0f} lines/s",
                f"≥ {TARGET_LINES_PER_S:,} lines/s, {args.lines:,} lines against "
                f"{args.products:,} products",
                args.quick,
            )
        )
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_database(BENCH_DB)


if __name__ == "__main__":
    main()
