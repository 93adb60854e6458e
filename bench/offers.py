#!/usr/bin/env python
"""Offers and prices recomputed after a supplier's list: the speed bar of issue 32
(1M products × 3 suppliers, a 100k-line list, offers and prices ≤ 5 s).

    .venv/bin/python bench/offers.py [--products 1000000] [--lines 100000] [--rounds 3]
                                     [--quick] [--keep]

On a fresh PostgreSQL database named after DATABASE_URL's plus "_bench_offers"
(dropped at the end, unless ``--keep``): ``--products`` products of ours; two
suppliers whose current lists hold a line for every product (one in roubles, one in
dollars with a rate and a 2 % surcharge, stock as figures, a recommended price beside
the main one), a third whose list holds ``--lines`` lines spread over the catalogue; every
line linked; one catch-all price rule (markup, rounding to ,99, a floor, the
recommended price respected, a hold at 25 %). Every offer and price is computed once
(timed, reported). Then, in each round, the third supplier sends a new list: each of
its lines at a new price, made current as an accepted import makes it (the old entries
ended, the new ones current); timed:

* pricing.offers.config_offers_refresh of that supplier: the offers of every product it
  offers (from all three suppliers), the best offer, our price, the writes and the
  events — what the worker does after the list was matched, as PRICEFEED_OFFERS_PARTS
  transactions side by side (the seconds of its stages are summed over them);
* the peer: one plain SQL statement over the same rows: each of those products' cheapest
  current line by the main price, in whatever currency, no rates, no rules, nothing
  written.

Then the issue's other two bars, each by its own script run from here (``--recompute-only``
skips them): bench/feeds.py (a 1M-offer YML feed streamed) and bench/delivery.py (webhook
and AMQP delivery beside a raw publisher); their lines are printed as they come.
``--quick``: 50k products, 5k lines, one round (and the others' quick forms).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bar_line,
    base_database_url,
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
)

BENCH_DB = bench_database("offers")
# The server's database the others' benches make theirs beside (django_on points this
# process's DATABASE_URL at this bench's own database, which is gone when they run).
BASE_URL = base_database_url()
TARGET_SECONDS = 5.0

PEER_SQL = """
SELECT l.product_id, min(e.price)
  FROM products_supplierlink l
  JOIN pricefeed_priceitem e
    ON e.config_id = l.config_id AND e.sku = l.supplier_sku
   AND e.valid_to IS NULL AND e.valid_from IS NOT NULL
 WHERE l.product_id IN (SELECT product_id FROM products_supplierlink WHERE config_id = %s)
 GROUP BY l.product_id
"""


def _setup(products: int, lines: int) -> list[int]:
    """The catalogue, three suppliers' current lists and their links; returns the
    configs' ids (the third is the one that sends new lists)."""
    from django.db import connection
    from django.utils import timezone

    from mailboxes.models import Mailbox
    from pricefeed.models import PriceImport, PriceListConfig
    from pricing.models import PriceRule, Rate, SupplierTerms

    mailbox = Mailbox.objects.create(name="bench", host="127.0.0.1", username="u", password="p")
    configs = []
    for n, (name, currency) in enumerate(
        (("Рубли", "RUB"), ("Доллары", "USD"), ("Новый прайс", "RUB")), start=1
    ):
        config = PriceListConfig.objects.create(
            name=name, mailbox=mailbox, default_currency=currency
        )
        configs.append(config.pk)
        _import(config, n)
    SupplierTerms.objects.create(config_id=configs[1], rate_surcharge=2, priority=10)
    today = timezone.localdate()
    Rate.objects.create(currency="USD", date=today, rate="91.5")
    PriceRule.objects.create(
        name="Всё", markup_percent=25, rounding=".99", min_margin_percent=10, hold_percent=25
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO products_product (own_code, name, brand, article, barcodes, unit,
                                          category)
            SELECT 'P-' || lpad(i::text, 8, '0'), 'Болт М' || (i %% 30) || 'х' || (i %% 200),
                   (ARRAY['Bosch', 'Kreps', 'Fischer', ''])[1 + i %% 4], 'A' || i, '{}', 'шт',
                   (ARRAY['Крепёж / Болты', 'Крепёж / Гайки', 'Инструмент'])[1 + i %% 3]
              FROM generate_series(1, %s) i
            """,
            [products],
        )
        step = max(products // lines, 1)
        imports = dict(
            PriceImport.objects.filter(config_id__in=configs).values_list("config_id", "id")
        )
        for config_id, count, every, currency, scale in (
            (configs[0], products, 1, "RUB", 100),
            (configs[1], products, 1, "USD", 1),
            (configs[2], lines, step, "RUB", 100),
        ):
            cursor.execute(
                """
                INSERT INTO pricefeed_priceitem (id, price_import_id, config_id, sku, name,
                       price, currency, quantity, row_number, valid_from, prices)
                SELECT (%(import)s::bigint << 32) + n, %(import)s, %(config)s,
                       'S' || (n * %(every)s), 'строка ' || n,
                       round((((n * %(every)s) %% 997 + 10) * %(scale)s
                             * (0.9 + random() * 0.2))::numeric, 2),
                       %(currency)s, n %% 50, n, now(),
                       jsonb_build_object('rrp', jsonb_build_object(
                           'price', (((n * %(every)s) %% 997 + 10) * 130)::text,
                           'currency', 'RUB'))
                  FROM generate_series(1, %(count)s) n
                """,
                {
                    "import": imports[config_id],
                    "config": config_id,
                    "every": every,
                    "count": count,
                    "currency": currency,
                    "scale": scale,
                },
            )
            cursor.execute(
                """
                INSERT INTO products_supplierlink (config_id, supplier_sku, product_id, kind,
                       state, confidence)
                SELECT %(config)s, 'S' || (n * %(every)s), p.id, 'barcode', 'auto', 0.99
                  FROM generate_series(1, %(count)s) n
                  JOIN products_product p
                    ON p.own_code = 'P-' || lpad((n * %(every)s)::text, 8, '0')
                """,
                {"config": config_id, "every": every, "count": count},
            )
        cursor.execute("ANALYZE")
    return configs


def _import(config, n: int):
    from django.utils import timezone

    from mailboxes.models import InboundMessage
    from pricefeed.models import PriceImport

    message = InboundMessage.objects.create(
        mailbox=config.mailbox, folder="INBOX", uidvalidity=1, uid=n,
        message_id=f"<bench-{n}@bench>", dedup_key=f"bench-{n}", status="DONE",
        sent_at=timezone.now(),
    )  # fmt: skip
    return PriceImport.objects.create(
        message=message, config=config, attachment_key="part1", filename="bench.csv",
        status="SUCCEEDED", accepted_at=timezone.now(),
    )  # fmt: skip


def _new_list(config_id: int, round_no: int, lines: int, step: int) -> None:
    """The third supplier's next list made current: every line at a new price."""
    from django.db import connection, transaction

    from pricefeed.models import PriceListConfig

    config = PriceListConfig.objects.get(pk=config_id)
    with transaction.atomic():
        price_import = _import(config, 100 + round_no)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE pricefeed_priceitem SET valid_to = now(), ended_by_id = %s"
                " WHERE config_id = %s AND valid_to IS NULL AND valid_from IS NOT NULL",
                [price_import.pk, config_id],
            )
            cursor.execute(
                """
                INSERT INTO pricefeed_priceitem (id, price_import_id, config_id, sku, name,
                       price, currency, quantity, row_number, valid_from)
                SELECT (%(import)s::bigint << 32) + n, %(import)s, %(config)s,
                       'S' || (n * %(every)s), 'строка ' || n,
                       round((((n * %(every)s) %% 997 + 10) * 100
                             * (0.8 + random() * 0.4))::numeric, 2),
                       'RUB', n %% 50, n, now()
                  FROM generate_series(1, %(count)s) n
                """,
                {"import": price_import.pk, "config": config_id, "every": step, "count": lines},
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE pricefeed_priceitem")


def _peer(config_id: int) -> float:
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(PEER_SQL, [config_id])
        cursor.fetchall()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=1_000_000)
    parser.add_argument("--lines", type=int, default=100_000, help="lines of the new list")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians)")
    parser.add_argument("--quick", action="store_true", help="50k products, 5k lines, 1 round")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument(
        "--recompute-only", action="store_true", help="skip the feed and delivery benches"
    )
    args = parser.parse_args()
    if args.quick:
        args.products, args.lines, args.rounds = 50_000, 5_000, 1
    load = os.getloadavg()
    print(f"load average at the start {load[0]:.2f} on {os.cpu_count()} cores", flush=True)
    interrupt_on_termination()
    url = fresh_database(BENCH_DB, "bench/offers.py")
    try:
        django_on(url)
        from pricing import offers

        started = time.perf_counter()
        configs = _setup(args.products, args.lines)
        print(
            f"set up {args.products:,} products, two full lists and one of {args.lines:,} "
            f"lines, all linked, in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        from django.conf import settings

        print(f"a list's refresh in {settings.PRICEFEED_OFFERS_PARTS} parts", flush=True)
        everything = offers.all_offers_refresh()
        print(
            f"first computation of everything: {everything.products:,} products, "
            f"{everything.offers:,} offers in {sum(everything.seconds.values()):.1f} s "
            f"({_stages(everything)})",
            flush=True,
        )
        step = max(args.products // args.lines, 1)
        ours, peers = [], []
        for round_no in range(1, args.rounds + 1):
            _new_list(configs[2], round_no, args.lines, step)
            peer = _peer(configs[2])
            began = time.perf_counter()
            done = offers.config_offers_refresh(configs[2])
            took = time.perf_counter() - began
            ours.append(took)
            peers.append(peer)
            print(
                f"round {round_no}: recomputed {done.products:,} products ({done.offers:,} "
                f"offers, {done.best_changed:,} best offers and {done.published_changed:,} "
                f"published prices changed, {done.held:,} held) in {took:.2f} s "
                f"({_stages(done)}); peer: the cheapest line per product in one SELECT "
                f"{peer:.2f} s",
                flush=True,
            )
    finally:
        if args.keep:
            print(f"database {BENCH_DB} kept (--keep)")
        else:
            drop_database(BENCH_DB)
    median, peer = statistics.median(ours), statistics.median(peers)
    print(f"medians: recompute {median:.2f} s, peer SELECT {peer:.2f} s ({median / peer:.1f}x)")
    print(
        bar_line(
            "offers_recompute",
            median <= TARGET_SECONDS,
            f"{median:.2f} s for a {args.lines:,}-line list over {args.products:,} products "
            f"× 3 suppliers",
            f"≤ {TARGET_SECONDS:.0f} s",
            args.quick,
        )
    )
    if not args.recompute_only:
        sys.exit(_others(args.quick))


def _others(quick: bool) -> int:
    """Runs bench/feeds.py and bench/delivery.py (their quick forms with ``quick``);
    the first non-zero exit status, else 0."""
    status = 0
    for script in ("feeds.py", "delivery.py"):
        path = ROOT / "bench" / script
        print(f"--- bench/{script}", flush=True)
        done = subprocess.run(
            [sys.executable, str(path), *(["--quick"] if quick else [])],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": BASE_URL},
        )
        status = status or done.returncode
    return status


def _stages(done) -> str:
    return " ".join(f"{stage} {took:.2f}" for stage, took in done.seconds.items())


if __name__ == "__main__":
    main()
