#!/usr/bin/env python
"""API benchmark: issue 15's bar for the read-only API, p99 ≤ 50 ms for a page of 1,000.

    .venv/bin/python bench/apibench.py [--items 10000000] [--pages 300] [--quick]

Works in a throwaway PostgreSQL database next to DATABASE_URL's (default: the local
server on 127.0.0.1:5432), named after it plus "_bench_api", dropped at the end. It
stores (COPY) ``--items`` price items in ten imports of one config, and that config's
catalogue: an entry for each SKU of the last import current (a tenth of ``--items``:
1M of 10M) and the previous value of each ended (as many again); then it requests
``--pages`` pages of 1,000 of the current catalogue and as many of the last import's
items, each list walked through its cursor from the start, and prints p50/p99 of each
(wall clock, and this process's CPU time per request, which other load on the machine
disturbs less), the plans of the two page queries (EXPLAIN: the catalogue's through the
unique partial index ``one_current_entry_per_sku``, the items' through the primary
key's range), and the bar, the worse of the two p99s. Then, outside the bar, as many
pages of the catalogue as it stood before the last import (``?as_of=``: the entries
the last import ended).

The requests go through Django's test Client, in this process: everything from the
middleware to the rendered JSON (token lookup, permission check, the page query, the
serializer, the renderer), without a WSGI server or a socket. A few requests before the
timed ones warm the process up (imports, the token's last-use write) and are not counted.
``--quick``: 1,000,000 items and 100 pages.

``measure_api_p99(database_url, items=..., pages=...)`` does the same in a database the
caller made (bench/export.py calls it): it adds a mailbox, a config, ten imports and the
catalogue of its own and measures those.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

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

TARGET_P99_MS = 50.0
PAGE = 1000
IMPORTS = 10
WARM_UP = 5
COPY_CHUNK = 50_000
WORDS = "Кабель ВВГ-нг медный Розетка Выключатель Лампа светодиодная Автомат Щит Провод".split()


BENCH_DB = bench_database("api")


# -- filling -----------------------------------------------------------------------------


def _copy(table: str, columns: str, lines) -> None:
    """COPY text-format ``lines`` (each ending in a newline) into ``table``."""
    from django.db import connection

    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) >= COPY_CHUNK:
                copy.write("".join(chunk))
                chunk.clear()
        if chunk:
            copy.write("".join(chunk))


def _name(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} {i % 997}"


def fill(items: int) -> dict:
    """Stores the benchmark's data (Django is on the bench database); returns the ids
    the requests need: the config, the last import, a token's key."""
    from django.contrib.auth.models import Permission, User
    from django.db import connection

    from api.tokens import token_create
    from mailboxes.models import InboundMessage, Mailbox
    from pricefeed.models import PriceImport, PriceItem, PriceListConfig, item_key

    tag = uuid.uuid4().hex[:8]
    mailbox = Mailbox.objects.create(
        name=f"bench-api-{tag}", host="localhost", username="u", password="p"
    )
    config = PriceListConfig.objects.create(mailbox=mailbox, name="Поставщик «Ромашка»")
    per_import = max(items // IMPORTS, 1)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    imports = []
    for n in range(IMPORTS):
        raw = f"Subject: {n}\r\n\r\nprices\r\n".encode()
        message = InboundMessage.objects.create(
            mailbox=mailbox,
            folder="INBOX",
            uidvalidity=1,
            uid=n + 1,
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
            rows_total=per_import,
            rows_ok=per_import,
            accepted_at=start + timedelta(days=n),
        )
        imports.append(price_import)
        key = item_key(price_import.pk, 0)
        imp = price_import.pk
        _copy(
            PriceItem._meta.db_table,
            "id, price_import_id, row_number, sku, name, price, currency, quantity",
            (
                f"{key + row}\t{imp}\t{row}\tA-{row:07d}\t{_name(row)}\t"
                f"{(row * 37 + n) % 500000 / 100:.2f}\tRUB\t{row % 500}\n"
                for row in range(2, per_import + 2)
            ),
        )
    # The catalogue (kept in the items table): the last import's items current, the one
    # before's ended by it.
    last, before = imports[-1], imports[-2]
    with connection.cursor() as cursor:
        for imp, valid_from, valid_to, ended_by in (
            (before.pk, before.accepted_at, last.accepted_at, last.pk),
            (last.pk, last.accepted_at, None, None),
        ):
            cursor.execute(
                f"UPDATE {PriceItem._meta.db_table} SET config_id = %s, valid_from = %s, "
                "valid_to = %s, ended_by_id = %s WHERE id >= %s AND id < %s",
                [config.pk, valid_from, valid_to, ended_by, item_key(imp, 0), item_key(imp + 1, 0)],
            )
        cursor.execute(f"VACUUM ANALYZE {PriceItem._meta.db_table}")
    user = User.objects.create_user(f"bench-api-{tag}", password=None)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_priceitem", "view_catalogueentry"])
    )
    _, key = token_create(user=user, name="bench")
    # A moment while the one-but-last import's values were current (the ended entries).
    then = (before.accepted_at + timedelta(hours=1)).isoformat()
    return {
        "config": config.pk,
        "import": last.pk,
        "key": key,
        "current": per_import,
        "then": then,
    }


# -- measuring ---------------------------------------------------------------------------


def _walk(
    client, url: str, pages: int, key: str, query: str = ""
) -> tuple[list[float], list[float], str]:
    """Times ``pages`` pages of ``url`` following the cursor (from the start again when
    the list ends); returns the times in ms (wall clock, and this process's CPU) and the
    SQL of the page query (from one more request, not timed)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    headers = {"HTTP_AUTHORIZATION": f"Token {key}", "HTTP_HOST": "localhost"}
    walls: list[float] = []
    cpus: list[float] = []
    first = following = f"{url}?page_size={PAGE}{query}"
    for n in range(WARM_UP + pages):
        started, cpu = time.perf_counter(), time.process_time()
        response = client.get(following, secure=True, **headers)
        elapsed = (time.perf_counter() - started) * 1000
        cpu_ms = (time.process_time() - cpu) * 1000
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code} {response.content[:300]!r}")
        body = response.json()
        if len(body["results"]) != PAGE and body["next"] is not None:
            raise SystemExit(f"{url}: a page of {len(body['results'])} rows")
        if n >= WARM_UP:
            walls.append(elapsed)
            cpus.append(cpu_ms)
        following = body["next"] or first
    with CaptureQueriesContext(connection) as queries:
        client.get(following, secure=True, **headers)
    page_sql = next(q["sql"] for q in queries.captured_queries if f"LIMIT {PAGE + 1}" in q["sql"])
    return walls, cpus, page_sql


def _plan(sql: str) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))], 2)


def _figures(walls: list[float], cpus: list[float]) -> dict:
    return {
        "p50_ms": round(statistics.median(walls), 2),
        "p99_ms": _p99(walls),
        "max_ms": round(max(walls), 2),
        "cpu_p50_ms": round(statistics.median(cpus), 2),
        "cpu_p99_ms": _p99(cpus),
        "requests": len(walls),
    }


def measure_api_p99(database_url: str, *, items: int, pages: int) -> dict:
    """Stores ``items`` price items and a catalogue of a tenth of them current (fill),
    in the database at ``database_url`` (migrated; Django is set up on it unless it
    already was), then times ``pages`` requests of a 1,000-row page of the catalogue
    and as many of an import's items. Returns the figures of each (p50_ms, p99_ms,
    max_ms, and the CPU time of this process per request, cpu_p50_ms and cpu_p99_ms,
    which the machine's other load disturbs less), the page queries' plans, the load
    average, ``p99_ms`` (the worse wall-clock p99) and ``met``."""
    from django.apps import apps

    if not apps.ready:
        django_on(database_url)
    from django.test import Client

    started = time.perf_counter()
    data = fill(items)
    filled = time.perf_counter() - started
    client = Client()
    load_before = os.getloadavg()[0]
    catalogue, catalogue_cpu, catalogue_sql = _walk(
        client, f"/api/configs/{data['config']}/catalogue/", pages, data["key"]
    )
    items_times, items_cpu, items_sql = _walk(
        client, f"/api/imports/{data['import']}/items/", pages, data["key"]
    )
    # Not part of the bar: the catalogue as it stood before the last import (?as_of).
    as_of, as_of_cpu, as_of_sql = _walk(
        client,
        f"/api/configs/{data['config']}/catalogue/",
        pages,
        data["key"],
        "&" + urlencode({"as_of": data["then"]}),
    )
    result = {
        "items": items,
        "current": data["current"],
        "pages": pages,
        "page_size": PAGE,
        "fill_seconds": round(filled, 1),
        "catalogue": _figures(catalogue, catalogue_cpu),
        "import_items": _figures(items_times, items_cpu),
        "catalogue_as_of": _figures(as_of, as_of_cpu),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cpus": os.cpu_count(),
        "catalogue_plan": _plan(catalogue_sql),
        "import_items_plan": _plan(items_sql),
        "catalogue_as_of_plan": _plan(as_of_sql),
        "client": "django.test.Client, in-process",
    }
    result["p99_ms"] = max(result["catalogue"]["p99_ms"], result["import_items"]["p99_ms"])
    result["met"] = result["p99_ms"] <= TARGET_P99_MS
    return result


def report(result: dict) -> None:
    print(
        f"stored {result['items']:,} items in {IMPORTS} imports and a catalogue of "
        f"{result['current']:,} current entries (and as many ended) in "
        f"{result['fill_seconds']} s"
    )
    for name in ("catalogue", "import_items", "catalogue_as_of"):
        f = result[name]
        print(
            f"{name}: {f['requests']} pages of {result['page_size']:,}: p50 {f['p50_ms']} ms, "
            f"p99 {f['p99_ms']} ms, max {f['max_ms']} ms; this process's CPU per request "
            f"p50 {f['cpu_p50_ms']} ms, p99 {f['cpu_p99_ms']} ms ({result['client']})"
        )
        print(f"{name} page plan:")
        print("    " + result[f"{name}_plan"].replace("\n", "\n    "))
    before, after = result["load_average"]
    print(f"load average {before} before, {after} after, on {result['cpus']} CPUs")
    verdict = "met" if result["met"] else "missed"
    print(
        f"BAR api_page_p99 {verdict} {result['p99_ms']} ms (target ≤ {TARGET_P99_MS:g} ms; "
        f"pages of {result['page_size']:,} among {result['items']:,} items)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000_000, help="price items stored")
    parser.add_argument("--pages", type=int, default=300, help="timed pages per list")
    parser.add_argument("--quick", action="store_true", help="1,000,000 items, 100 pages")
    args = parser.parse_args()
    if args.quick:
        args.items, args.pages = 1_000_000, 100

    production_key()
    interrupt_on_termination()
    url = fresh_database(BENCH_DB, "bench/apibench.py")
    try:
        django_on(url)
        result = measure_api_p99(url, items=args.items, pages=args.pages)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(BENCH_DB)
    report(result)


if __name__ == "__main__":
    main()
