#!/usr/bin/env python
"""Our catalogue's load: the speed bar of issue 31 (1M products from CSV ≥ 100k rows/s).

    .venv/bin/python bench/products_load.py [--rows 1000000] [--seed 5] [--rounds 2]
                                            [--quick] [--keep]

Generates, in a temporary directory and from a fixed seed, our template as a UTF-8 ';'
CSV of ``--rows`` products (own code, a Russian name, brand, article, one or two valid
EAN-13 barcodes, unit, a two-level category path) and a copy of it with 10% of the
products changed (new names and brands), on a fresh PostgreSQL database named after
DATABASE_URL's plus "_bench_products_load" (dropped at the end, also on an error or Ctrl-C,
unless ``--keep``). Then, in each round, in child processes of their own:

* the peer: a bare ``COPY ... FROM STDIN (FORMAT csv, HEADER, DELIMITER ';')`` of the
  very file into a plain table of seven text columns, no index, committed: what
  PostgreSQL takes just to store those bytes;
* products.loading.products_load of the file into an empty catalogue (every product
  added: read, checked, COPYed into the load table, inserted);
* products_load of the changed copy over it (10% changed, the rest compared and left).

One ``BAR <name> met|missed`` line per target; no thresholds in the test suite.
``--quick``: 50k rows, one round.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bar_line,
    bench_database,
    database_url,
    drop_database,
    fresh_database,
    interrupt_on_termination,
    production_key,
)

BENCH_DB = bench_database("products_load")
TARGET_ROWS_PER_SECOND = 100_000
WORDS = (
    "Болт Гайка Шайба Винт Саморез Анкер Дюбель оцинкованный нержавеющий DIN933 DIN934 "
    "М6 М8 М10 М12 х20 х30 х40 х60 потай полусфера шестигранный упаковка"
).split()
BRANDS = ("Fischer", "Sormat", "Hilti", "Bossard", "Würth", "Kreps", "Tech-KREP", "")
UNITS = ("шт", "уп", "кг", "м")
TOPS = ("Крепёж", "Инструмент", "Электрика", "Сантехника")
SUBS = ("Болты", "Гайки", "Анкеры", "Шурупы", "Сверла", "Кабель", "Фитинги")
HEADER = "own_code;name;brand;article;barcode;unit;category\n"


def ean13(body: str) -> str:
    total = sum((3 if i % 2 else 1) * int(d) for i, d in enumerate(body))
    return body + str((10 - total % 10) % 10)


def product_line(rnd: random.Random, i: int, changed: bool = False) -> str:
    name = " ".join(rnd.choice(WORDS) for _ in range(6))
    brand = rnd.choice(BRANDS)
    if changed:
        name += " (новая упаковка)"
        brand = "Changed"
    codes = [ean13(f"46{i:010d}")]
    if i % 7 == 0:
        codes.append(ean13(f"20{i:010d}"))
    category = f"{TOPS[i % len(TOPS)]} / {SUBS[i % len(SUBS)]}"
    unit = UNITS[i % len(UNITS)]
    return f"P-{i:08d};{name};{brand};A{i:07d};{'|'.join(codes)};{unit};{category}\n"


def make_files(first: Path, changed: Path, rows: int, seed: int) -> None:
    rnd = random.Random(seed)
    lines = [product_line(rnd, i) for i in range(rows)]
    with first.open("w", encoding="utf-8") as out:
        out.write(HEADER)
        out.writelines(lines)
    pick = random.Random(seed + 1)
    for i in pick.sample(range(rows), rows // 10):
        lines[i] = product_line(pick, i, changed=True)
    with changed.open("w", encoding="utf-8") as out:
        out.write(HEADER)
        out.writelines(lines)


# --- children: each runs in a fresh interpreter and prints one JSON line -------------


def _django() -> None:
    os.environ["DATABASE_URL"] = database_url(BENCH_DB)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child_copy(path: str) -> None:
    """The peer: the file COPYed as it is into a plain table, in one transaction."""
    import psycopg

    url = database_url(BENCH_DB).replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_plain")
        conn.execute(
            "CREATE TABLE bench_plain (own_code text, name text, brand text, article text, "
            "barcode text, unit text, category text)"
        )
        conn.commit()
        started = time.perf_counter()
        with open(path, "rb") as source, conn.cursor() as cur:
            with cur.copy("COPY bench_plain FROM STDIN (FORMAT csv, HEADER, DELIMITER ';')") as cp:
                while chunk := source.read(1 << 20):
                    cp.write(chunk)
        conn.commit()
        seconds = time.perf_counter() - started
        rows = conn.execute("SELECT count(*) FROM bench_plain").fetchone()
        server = conn.execute("SHOW server_version").fetchone()
        conn.execute("DROP TABLE bench_plain")
        conn.commit()
    assert rows is not None and server is not None
    print(json.dumps({"seconds": seconds, "rows": rows[0], "server": server[0]}))


def child_load(path: str, empty_first: str) -> None:
    """products_load of the file (into an empty catalogue when ``empty_first``)."""
    _django()
    from django.db import connection

    from products.loading import products_load

    if empty_first == "1":
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE products_product CASCADE")
    # The load's statements, timed (the COPY of the file is not one: the rest of the
    # time is reading the file and COPYing it, and the commit).
    statements: dict[str, float] = {}

    def timed(execute, sql, params, many, context):
        begun = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            words = " ".join(sql.split()[:4])
            statements[words] = statements.get(words, 0.0) + time.perf_counter() - begun

    started = time.perf_counter()
    with connection.execute_wrapper(timed):
        result = products_load(path)
    seconds = time.perf_counter() - started
    out = {
        "seconds": seconds,
        "read": result.read,
        "added": result.added,
        "changed": result.changed,
        "retired": result.retired,
        "unchanged": result.unchanged,
        "refused": result.refused,
        "peak_rss_mb": _peak_rss_mb(),
        "sql_seconds": sum(statements.values()),
        "slowest": sorted(statements.items(), key=lambda item: -item[1])[:3],
    }
    print(json.dumps(out))


CHILDREN = {"copy": child_copy, "load": child_load}


def run_child(kind: str, *args: object) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"child {kind} exited with {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds:,.0f} rows/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="products in the file")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="rounds (medians)")
    parser.add_argument("--quick", action="store_true", help="50k rows, one round")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        CHILDREN[args.child[0]](*args.child[1:])
        return
    if args.quick:
        args.rows, args.rounds = 50_000, 1
    load = os.getloadavg()
    print(f"load average at the start {load[0]:.2f} on {os.cpu_count()} cores", flush=True)
    interrupt_on_termination()
    production_key()
    url = fresh_database(BENCH_DB, "bench/products_load.py")
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            check=True,
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url},
        )
        with tempfile.TemporaryDirectory(prefix="pricefeed-bench-") as tmp:
            first, changed = Path(tmp) / "products.csv", Path(tmp) / "products-changed.csv"
            started = time.perf_counter()
            make_files(first, changed, args.rows, args.seed)
            print(
                f"generated {first.stat().st_size / 2**20:.1f} MiB CSV ({args.rows:,} products) "
                f"and its copy with 10% changed in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
            rounds = []
            for i in range(1, args.rounds + 1):
                copy = run_child("copy", first)
                loaded = run_child("load", first, 1)
                reloaded = run_child("load", changed, 0)
                rounds.append((copy, loaded, reloaded))
                print(
                    f"round {i}: bare COPY {copy['seconds']:.2f} s "
                    f"({_rate(copy['rows'], copy['seconds'])}); load into an empty catalogue "
                    f"{loaded['seconds']:.2f} s ({_rate(loaded['read'], loaded['seconds'])}, "
                    f"{loaded['added']:,} added, peak RSS {loaded['peak_rss_mb']:.0f} MB); "
                    f"reload with 10% changed {reloaded['seconds']:.2f} s "
                    f"({_rate(reloaded['read'], reloaded['seconds'])}, {reloaded['changed']:,} "
                    f"changed, {reloaded['unchanged']:,} unchanged, {reloaded['retired']:,} "
                    f"retired)",
                    flush=True,
                )
                for name, run in (("load", loaded), ("reload", reloaded)):
                    slowest = ", ".join(f"{sql}… {s:.2f} s" for sql, s in run["slowest"])
                    print(
                        f"  {name}: reading and COPY (and commit) "
                        f"{run['seconds'] - run['sql_seconds']:.2f} s, statements "
                        f"{run['sql_seconds']:.2f} s (slowest: {slowest})",
                        flush=True,
                    )
    finally:
        if args.keep:
            print(f"database {BENCH_DB} kept (--keep)")
        else:
            drop_database(BENCH_DB)
    report(args, rounds)


def report(args: argparse.Namespace, rounds: list) -> None:
    median = statistics.median
    rows = args.rows
    copy_s = median(c["seconds"] for c, _, _ in rounds)
    load_s = median(lo["seconds"] for _, lo, _ in rounds)
    reload_s = median(re["seconds"] for _, _, re in rounds)
    print(
        f"peer bare COPY (PostgreSQL {rounds[0][0]['server']}): the CSV file's bytes into a "
        f"plain table of 7 text columns, no index, one transaction: median {copy_s:.2f} s "
        f"({_rate(rows, copy_s)})"
    )
    print(
        f"load medians: into an empty catalogue {load_s:.2f} s ({_rate(rows, load_s)}, "
        f"{load_s / copy_s:.1f}x the bare COPY); reload with 10% changed {reload_s:.2f} s "
        f"({_rate(rows, reload_s)}, {reload_s / copy_s:.1f}x the bare COPY)"
    )
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} on {os.cpu_count()} cores")
    size = f"; here {rows:,} products" if rows != 1_000_000 else ""
    target = f"≥ {TARGET_ROWS_PER_SECOND:,} rows/s for 1M products, median of {len(rounds)}"
    print(
        bar_line(
            "products_load_rate",
            rows / load_s >= TARGET_ROWS_PER_SECOND,
            _rate(rows, load_s),
            f"{target}, into an empty catalogue{size}",
            args.quick,
        )
    )
    print(
        bar_line(
            "products_reload_rate",
            rows / reload_s >= TARGET_ROWS_PER_SECOND,
            _rate(rows, reload_s),
            f"{target}, a reload with 10% changed{size}",
            args.quick,
        )
    )


if __name__ == "__main__":
    main()
