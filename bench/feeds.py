#!/usr/bin/env python
"""A 1M-offer YML feed streamed through the real view: the speed and memory bars of
issue 32 (≥ 200,000 offers/s, peak RSS growth ≤ 150 MB).

    .venv/bin/python bench/feeds.py [--products 1000000] [--rounds 3] [--quick] [--keep]

On a fresh PostgreSQL database named after DATABASE_URL's plus "_bench_feeds" (dropped
at the end, unless ``--keep``): ``--products`` products of ours, each with a published
price (names with markup and quotes to escape, a brand, an article, a barcode, a
two-level category out of a thousand), written by SQL. A YML feed is requested through
Django's test client (the whole stack: middleware, the token's lookup, the view, its
StreamingHttpResponse) and its body read to the end, in each round; timed, and this
process's resident memory sampled every 5 ms while it streams (peak minus the RSS just
before the request).

The peer, in the same run: a plain ``COPY (SELECT own_code, price ...) TO STDOUT`` of
the same rows read to the end through psycopg — the floor of getting those rows out of
PostgreSQL at all, with no XML.

``--quick``: 50k products, one round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bar_line,
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
)

BENCH_DB = bench_database("feeds")
TARGET_RATE = 200_000
TARGET_RSS_MB = 150

SETUP_SQL = [
    """
    INSERT INTO products_product (own_code, name, brand, article, barcodes, unit, category)
    SELECT 'P' || lpad(i::text, 8, '0'),
           'Болт <М' || (i %% 40) || '> & "шайба" ' || i,
           'Brand ' || (i %% 500),
           'ART-' || i,
           ARRAY[(4600000000000 + i)::text],
           'шт',
           'Категория ' || (i %% 50) || ' / Подкатегория ' || (i %% 1000)
      FROM generate_series(1, %(n)s) i
    """,
    """
    INSERT INTO pricing_productprice (product_id, status, price, available, quantity, choice,
                                      offer_sku, offer_price_type, offer_currency, rule_name,
                                      rounding)
    SELECT id, 'published', (id %% 10000) + 0.99, id %% 3 <> 0, id %% 100, '{}'::jsonb,
           '', '', '', '', ''
      FROM products_product
    """,
    """
    INSERT INTO pricing_publishedversion (id, number, changed_at) VALUES (1, 1, now())
    ON CONFLICT (id) DO UPDATE SET number = 1
    """,
    "ANALYZE products_product",
    "ANALYZE pricing_productprice",
]

PEER_SQL = """
COPY (SELECT p.own_code, pp.price
        FROM products_product p JOIN pricing_productprice pp ON pp.product_id = p.id
       WHERE p.retired_at IS NULL AND pp.price IS NOT NULL
       ORDER BY p.own_code) TO STDOUT
"""


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Sampler(threading.Thread):
    """The process's resident memory, its peak over the run."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peak = _rss()

    def run(self) -> None:
        while not self.stop.wait(0.005):
            self.peak = max(self.peak, _rss())


def _setup(products: int) -> str:
    from django.db import connection

    from feeds.models import Feed
    from feeds.tokens import feed_token_renew

    with connection.cursor() as cursor:
        for statement in SETUP_SQL:
            cursor.execute(statement, {"n": products})
    feed = Feed.objects.create(name="bench", format=Feed.Format.YML, shop_name="Bench")
    return feed_token_renew(feed)


def _stream(token: str) -> tuple[float, int, int]:
    """Seconds, body bytes and peak RSS growth of one request of the feed."""
    import gc

    from django.test import Client

    client = Client()
    gc.collect()
    sampler = Sampler()
    before = sampler.peak
    sampler.start()
    started = time.perf_counter()
    response = client.get(f"/feeds/{token}/", secure=True, HTTP_HOST="localhost")
    size = 0
    last = b""
    for chunk in response.streaming_content:
        size += len(chunk)
        last = chunk
    took = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    response.close()
    if response.status_code != 200 or not last.endswith(b"</yml_catalog>\n"):
        sys.exit(f"the feed did not come whole: {response.status_code} {last[-200:]!r}")
    return took, size, sampler.peak - before


def _peer() -> float:
    from django.db import connection

    connection.ensure_connection()
    started = time.perf_counter()
    with connection.connection.cursor() as cursor, cursor.copy(PEER_SQL) as copy:
        for _block in copy:
            pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians)")
    parser.add_argument("--quick", action="store_true", help="50k products, one round")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()
    if args.quick:
        args.products, args.rounds = 50_000, 1
    load = os.getloadavg()
    print(f"load average at the start {load[0]:.2f} on {os.cpu_count()} cores", flush=True)
    interrupt_on_termination()
    url = fresh_database(BENCH_DB, "bench/feeds.py")
    rates, peers, growths = [], [], []
    try:
        django_on(url)
        started = time.perf_counter()
        token = _setup(args.products)
        print(
            f"set up {args.products:,} products with published prices in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
        for round_no in range(1, args.rounds + 1):
            peer = _peer()
            took, size, growth = _stream(token)
            rates.append(args.products / took)
            peers.append(args.products / peer)
            growths.append(growth)
            print(
                f"round {round_no}: YML feed of {args.products:,} offers ({size / 1e6:.0f} MB) "
                f"in {took:.2f} s = {args.products / took:,.0f} offers/s, peak RSS growth "
                f"{growth / 2**20:.1f} MB; peer COPY of own_code and price {peer:.2f} s = "
                f"{args.products / peer:,.0f} rows/s",
                flush=True,
            )
    finally:
        if args.keep:
            print(f"database {BENCH_DB} kept (--keep)")
        else:
            drop_database(BENCH_DB)
    rate, peer_rate = statistics.median(rates), statistics.median(peers)
    growth_mb = max(growths) / 2**20
    print(
        f"medians: feed {rate:,.0f} offers/s, peer COPY {peer_rate:,.0f} rows/s "
        f"({rate / peer_rate:.2f}x the peer)"
    )
    print(
        bar_line(
            "feeds_yml_rate",
            rate >= TARGET_RATE,
            f"{rate:,.0f} offers/s over {args.products:,} offers",
            f"≥ {TARGET_RATE:,} offers/s",
            args.quick,
        )
    )
    print(
        bar_line(
            "feeds_yml_peak_rss",
            growth_mb <= TARGET_RSS_MB,
            f"{growth_mb:.1f} MB peak RSS growth while streaming",
            f"≤ {TARGET_RSS_MB} MB",
            args.quick,
        )
    )


if __name__ == "__main__":
    main()
