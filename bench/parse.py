#!/usr/bin/env python
"""Parsing benchmark: the import's speed and memory bars.

    .venv/bin/python bench/parse.py [--rows 100000] [--csv-rows 1000000] [--seed 3]
                                    [--rounds 3] [--quick] [--keep]

Generates, in a temporary directory and from a fixed seed, a 100k-row x 8-column xlsx
(openpyxl write_only, two title rows above the header), a 1M-row cp1251 ';' CSV with
Russian numbers ("1 234,50") and a changed copy of that CSV, on a fresh PostgreSQL
database named after DATABASE_URL's plus "_bench_parse" (dropped at the end, also on an
error or Ctrl-C, unless ``--keep``). Then, in one run and on these same files:

* the xlsx through the whole import (pricefeed.imports.lifecycle.price_import_run: the
  stored raw message is read, the attachment cut out of it, parsed, COPYed into
  PriceItem, diffed, and the status, counts and outbox event committed), twice on a
  config of its own (the first import has nothing to diff against, the second diffs
  against the first), alternated ``--rounds`` times with python-calamine alone reading
  the same sheet (loaded, and its rows made Python values: no guard, no conversion, no
  database), the reader the import itself uses. A round's figure is its slower import;
  its ratio is that import over calamine alone: what the import costs on top of reading
  the workbook;
* the CSV likewise, on a config of its own per round: a first import, a second of the
  same rows (their digests tell the diff they are the same, without a join) and a third
  with 1% of the prices changed, 0.5% of the rows gone and 5,000 new ones (the diff's
  join of 1M x 1M rows), alternated with a bare ``COPY ... FROM STDIN`` of the same
  parsed rows, as the import's writer formats them, into the same items table: once as
  a config's first list (made current as stored) and once as a later list (stored), so
  that each import is held against the COPY of the very lines it writes. The files'
  «Бренд» and «Ед.» columns are read as extra values: from the first row that has some
  on, the import's lines carry the extra columns (sql.COPY_RICH_ITEMS), and so do the
  bare COPY's, with the same values (storage.extra_tails), so that the ratio is the
  import's own cost, not that of the extra data;
* the xlsx through pricefeed.parsing.parse() alone (no database), for reference, and
  the CSV's parse() alone (rows collected: the preview's path) from the COPY rounds;
* peak RSS (VmHWM, reset before each import) of the process while it imports;
* the CPU each import used, in its own process and in its PostgreSQL backends (read
  from /proc when the server runs on this machine): spread evenly over every core, that
  work gives the floor of the xlsx ratio, however the import's steps are overlapped.

(The earlier bar against plain openpyxl, ``xlsx_vs_openpyxl`` at 10x, is retired: on
two cores the import's own CPU, about 1.3 CPU-s for 100k rows with its PostgreSQL
backends, caps it below 10x whatever is overlapped.)

A 1M-row CSV is over two default limits: the bench raises the file cap for it and stores
the message itself, past the listener's message cap, and prints both. Each measurement
runs in a child process of its own, so that one file's memory does not pollute another's
figures. No thresholds in the test suite: one ``BAR <name> met|missed`` line per target.
``--quick``: a 20k-row xlsx, a 200k-row CSV, one round (about two minutes).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

WORDS = (
    "Кабель ВВГ-нг медный Розетка Выключатель Лампа светодиодная Автомат Щит "
    "Провод ПВС белый чёрный 3х2,5 IP44 накладной скрытый двойной"
).split()
BRANDS = ("IEK", "ABB", "Legrand", "Schneider", "EKF", "TDM")

# The targets (issue 3's speed and memory bars, issue 16's COPY ratio).
TARGET_XLSX_SECONDS = 3.0
# The import over python-calamine alone reading the same sheet (1.75-1.8x when set).
TARGET_XLSX_VS_CALAMINE = 2.0
TARGET_XLSX_RSS_MB = 250
TARGET_CSV_VS_COPY = 0.6

COPY_WRITE_BYTES = 1 << 20  # the bare COPY writes its text in pieces of this size
COPY_TEXT_ROWS = 20_000  # rows formatted per _copy_text call, as the import's writer does

# Why the defaults are what they are, in short (docs/flow.md, docs/configuration.md).
WHY_FILE_CAP = (
    "a cap on untrusted input: every attachment is read and unpacked in memory, and this "
    "bounds one file of it"
)
WHY_MESSAGE_CAP = (
    "the listener fetches a message whole into memory (about 1.4x its size) and REJECTS a "
    "larger one from its headers, body never fetched"
)


def make_xlsx(path: Path, rows: int, seed: int) -> None:
    import openpyxl

    rnd = random.Random(seed)
    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("Прайс")
    ws.append(["Прайс-лист ООО «Ромашка»"])
    ws.append(["Цены в рублях с НДС"])
    ws.append(
        ["Артикул", "Наименование", "Бренд", "Цена", "Валюта", "Остаток", "Ед.", "Примечание"]
    )
    for i in range(rows):
        ws.append(
            [
                f"A-{i:07d}",
                " ".join(rnd.choice(WORDS) for _ in range(5)),
                rnd.choice(BRANDS),
                round(rnd.uniform(1, 50000), 2),
                "RUB",
                rnd.randint(0, 500),
                "шт",
                rnd.choice(("", "новинка", "хит продаж", "")),
            ]
        )
    wb.save(path)


def make_csv(path: Path, rows: int, seed: int) -> None:
    rnd = random.Random(seed)
    lines = [
        "Прайс-лист ООО «Ромашка»;;;;;;;",
        "Артикул;Наименование;Бренд;Цена;Валюта;Остаток;Ед.;Примечание",
    ]
    for i in range(rows):
        price = f"{rnd.uniform(1, 50000):,.2f}".replace(",", " ").replace(".", ",")
        lines.append(
            f"A-{i:07d};{' '.join(rnd.choice(WORDS) for _ in range(5))};"
            f"{rnd.choice(BRANDS)};{price};RUB;{rnd.randint(0, 500)};шт;"
        )
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("cp1251"))


def make_changed_csv(source: Path, path: Path, seed: int) -> None:
    """``source`` with 1% of the prices changed, 0.5% of the rows gone and 5,000 added."""
    rnd = random.Random(seed)
    lines = source.read_bytes().decode("cp1251").split("\r\n")
    out = lines[:2]
    for line in lines[2:]:
        if not line:
            continue
        r = rnd.random()
        if r < 0.005:
            continue
        if r < 0.015:
            fields = line.split(";")
            fields[3] = f"{rnd.uniform(1, 50000):.2f}".replace(".", ",")
            line = ";".join(fields)
        out.append(line)
    out.extend(f"Z-{i:07d};Новинка {i};IEK;12,50;RUB;1;шт;" for i in range(5000))
    path.write_bytes(("\r\n".join(out) + "\r\n").encode("cp1251"))


def _peak_rss_mb(field: str = "VmHWM") -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak_rss() -> float:
    """Starts a new peak (Linux: clear_refs 5 resets VmHWM); returns the RSS now."""
    import gc

    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _peak_rss_mb("VmRSS")


def _backends_cpu_seconds() -> float | None:
    """CPU seconds used so far by the PostgreSQL backends connected to this database, read
    from /proc: None when the server is not on this machine (or /proc is not readable)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend'"
        )
        pids = [pid for (pid,) in cursor.fetchall()]
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        for pid in pids:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (man 5 proc)
    except OSError:
        return None
    return total / tick


BENCH_DB = bench_database("parse")


def _django_on_bench_database() -> None:
    os.environ["DATABASE_URL"] = database_url(BENCH_DB)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


# --- children: each runs in a fresh interpreter and prints one JSON line -------------


def child_calamine(path: str) -> None:
    """python-calamine alone: the first sheet loaded and each row made a list of Python
    values. Imports nothing of the project."""
    import io
    from importlib.metadata import version

    from python_calamine import CalamineWorkbook

    data = Path(path).read_bytes()
    started = time.perf_counter()
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(data)).get_sheet_by_index(0)
    loaded = time.perf_counter() - started
    rows = sum(1 for _ in sheet.iter_rows())
    seconds = time.perf_counter() - started
    out = {"seconds": seconds, "load_seconds": loaded, "rows": rows}
    out["version"] = version("python-calamine")
    out["python"] = sys.version.split()[0]
    print(json.dumps(out))


def child_parse(path: str) -> None:
    """pricefeed.parsing.parse() alone over the xlsx, rows collected (no database)."""
    from pricefeed.parsing import Limits, ParseOptions, parse
    from pricefeed.parsing.workbook_guard import check_workbook

    data = Path(path).read_bytes()
    limits = Limits(max_file_bytes=max(Limits().max_file_bytes, len(data)))
    started = time.perf_counter()
    result = parse(data, ParseOptions(), limits)
    out: dict = {"seconds": time.perf_counter() - started, "rows": result.rows_total}
    out["peak_rss_mb"] = _peak_rss_mb()
    started = time.perf_counter()
    check_workbook(data, limits)
    out["guard_seconds"] = time.perf_counter() - started
    print(json.dumps(out))


def child_copy(path: str) -> None:
    """The COPY yardstick: the CSV parsed (rows collected) and formatted as the import's
    writer formats them, both untimed; then a bare COPY of that text into the items
    table, in one transaction, committed: timed. The writer makes two kinds of line
    (storage.Ends): a config's first list is made current as it is stored (its lines
    carry the moment, and the index of current entries takes every row), a later list
    is stored not current. Each kind is COPYed once, as a key range of its own. Lines
    from the first row with extra values on carry the extra columns, with the same
    values (storage.extra_tails), in a second COPY (sql.COPY_RICH_ITEMS) of the same
    transaction, as the import's writer writes them."""
    _django_on_bench_database()
    import psycopg
    from django.db import connection

    from pricefeed import sql
    from pricefeed.imports import storage
    from pricefeed.models import PriceImport, PriceListConfig
    from pricefeed.parsing import Limits, ParseOptions, parse

    data = Path(path).read_bytes()
    limits = Limits(max_file_bytes=max(Limits().max_file_bytes, len(data)))
    out: dict = {"rss_before_mb": _reset_peak_rss()}
    started = time.perf_counter()
    parsed = parse(data, ParseOptions(), limits)
    rows = parsed.rows
    out["parse_seconds"] = time.perf_counter() - started
    # The extra values (brand, unit, ...) as the import's writer formats them: each
    # line from the first with some on carries the extra columns (storage.ItemWriter).
    tails: dict[int, str] = {}
    for chunk in parsed.extras:
        numbers = range(chunk.first_row, chunk.first_row + chunk.count)
        tails.update(zip(numbers, storage.extra_tails(chunk), strict=True))
    plain = next((i for i, row in enumerate(rows) if row[0] in tails), len(rows))
    out["rich_rows"] = len(rows) - plain
    del parsed
    out["parse_peak_rss_mb"] = _peak_rss_mb()
    out["rows"] = len(rows)
    del data
    # Key ranges and a config of their own: ids taken from the sequences are never
    # handed out again, and the items table checks no foreign key (models.item_key).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')), "
            "nextval(pg_get_serial_sequence(%s, 'id')), "
            "nextval(pg_get_serial_sequence(%s, 'id')), clock_timestamp()",
            [
                PriceImport._meta.db_table,
                PriceImport._meta.db_table,
                PriceListConfig._meta.db_table,
            ],
        )
        first_id, second_id, config_id, moment = _row(cursor.fetchone())
    connection.close()
    ends = storage.Ends(config_id, moment)
    kinds = [("current", first_id, ends.current), ("stored", second_id, ends.stored)]
    url = database_url(BENCH_DB).replace("postgres://", "postgresql://")
    for kind, import_id, line_ends in kinds:
        started = time.perf_counter()
        text = b"".join(
            storage._copy_text(
                import_id, rows[at : min(at + COPY_TEXT_ROWS, plain)], line_ends
            ).encode()
            for at in range(0, plain, COPY_TEXT_ROWS)
        )
        rich_text = b"".join(
            storage._copy_text(
                import_id,
                rows[at : at + COPY_TEXT_ROWS],
                [
                    tails.get(row[0], storage.EMPTY_TAIL) + line_ends
                    for row in rows[at : at + COPY_TEXT_ROWS]
                ],
                rich=True,
            ).encode()
            for at in range(plain, len(rows), COPY_TEXT_ROWS)
        )
        out[f"{kind}_text_seconds"] = time.perf_counter() - started
        out[f"{kind}_bytes"] = len(text) + len(rich_text)
        with psycopg.connect(url) as conn:
            out["server"] = _one(conn.execute("SHOW server_version").fetchone())
            out["psycopg"] = psycopg.__version__
            started = time.perf_counter()
            for statement, lines in ((sql.COPY_ITEMS, text), (sql.COPY_RICH_ITEMS, rich_text)):
                if not lines:
                    continue
                view = memoryview(lines)
                with conn.cursor() as cur, cur.copy(statement) as copy:
                    for at in range(0, len(view), COPY_WRITE_BYTES):
                        copy.write(view[at : at + COPY_WRITE_BYTES])
                del view
            conn.commit()
            out[f"{kind}_seconds"] = time.perf_counter() - started
            stored = _one(
                conn.execute(
                    f"SELECT count(*) FROM {sql.ITEMS} WHERE price_import_id = %s", [import_id]
                ).fetchone()
            )
        del text, rich_text
        if stored != out["rows"]:
            sys.exit(f"copy child: {stored:,} rows stored, {out['rows']:,} sent")
    # One kind only (older code): it stands for both imports' lines.
    out.setdefault("current_seconds", out["stored_seconds"])
    print(json.dumps(out))


def _row(row: tuple | None) -> tuple:
    assert row is not None
    return row


def _one(row: tuple | None) -> Any:
    return _row(row)[0]


def child_store(config_name: str, path: str, changed: str | None = None) -> None:
    """Parse + store through the real import service (PostgreSQL, COPY, diff), on a
    config of its own: twice, so the second run also diffs the rows against the first;
    a third time with ``changed``, when given."""
    import hashlib
    import uuid

    _django_on_bench_database()
    from django.conf import settings

    from devkit.samples import supplier_email
    from mailboxes.models import InboundMessage, Mailbox
    from pricefeed.imports import lifecycle
    from pricefeed.models import PriceImport, PriceListConfig

    data = Path(path).read_bytes()
    files = [len(data)]
    if changed:
        files.append(Path(changed).stat().st_size)
    # The one limit the import itself checks that a 1M-row CSV is over; the parent
    # prints the raise. The message cap is the listener's (see the parent).
    limits: dict = {
        "file_setting": "PRICEFEED_PARSE_MAX_FILE_BYTES",
        "file_default": settings.PRICEFEED_PARSE_MAX_FILE_BYTES,
        "file_bytes": max(files),
        "message_setting": "PRICEFEED_MAX_MESSAGE_BYTES",
        "message_default": settings.PRICEFEED_MAX_MESSAGE_BYTES,
    }
    settings.PRICEFEED_PARSE_MAX_FILE_BYTES = max(settings.PRICEFEED_PARSE_MAX_FILE_BYTES, *files)
    name = Path(path).name
    mailbox, _ = Mailbox.objects.get_or_create(
        name="bench", defaults={"host": "localhost", "username": "u", "password": "p"}
    )
    config = PriceListConfig.objects.create(mailbox=mailbox, name=config_name)
    out: dict = {"limits": limits}
    runs = [("first", data), ("second", data)]
    if changed:
        runs.append(("changed", Path(changed).read_bytes()))
    message_bytes = 0
    for run, payload in runs:
        raw = supplier_email(subject=run, attachments=[(name, payload)])
        message_bytes = max(message_bytes, len(raw))
        message = InboundMessage.objects.create(
            mailbox=mailbox,
            folder="INBOX",
            uidvalidity=1,
            uid=InboundMessage.objects.count() + 1,
            raw=raw,
            size=len(raw),
            sha256=hashlib.sha256(raw).hexdigest(),
            dedup_key=uuid.uuid4().hex,
        )
        price_import = PriceImport.objects.create(
            message=message, config=config, attachment_key="part2", filename=name
        )
        del raw, message, payload  # the import reads the message from the database
        price_import = PriceImport.objects.get(pk=price_import.pk)
        out[f"{run}_rss_before_mb"] = _reset_peak_rss()
        server_cpu = _backends_cpu_seconds()
        cpu = time.process_time()
        started = time.perf_counter()
        status = lifecycle.price_import_run(import_id=price_import.pk, worker="bench")
        out[f"{run}_seconds"] = time.perf_counter() - started
        out[f"{run}_cpu_seconds"] = time.process_time() - cpu
        server_after = _backends_cpu_seconds()
        if server_cpu is not None and server_after is not None:
            out[f"{run}_server_cpu_seconds"] = server_after - server_cpu
        out[f"{run}_peak_rss_mb"] = _peak_rss_mb()
        price_import.refresh_from_db()
        out[f"{run}_rows"] = price_import.rows_ok
        out[f"{run}_status"] = status
        out[f"{run}_diff"] = {k: price_import.diff.get(k) for k in ("added", "removed", "changed")}
    limits["message_bytes"] = message_bytes
    out["rows"] = out["first_rows"]
    slower = max(("first", "second"), key=lambda run: out[f"{run}_seconds"])
    out["slower"] = out[f"{slower}_seconds"]
    out["slower_cpu_seconds"] = out[f"{slower}_cpu_seconds"]
    out["slower_server_cpu_seconds"] = out.get(f"{slower}_server_cpu_seconds")
    out["peak_rss_mb"] = max(out[f"{run}_peak_rss_mb"] for run, _ in runs)
    out["rss_before_mb"] = max(out[f"{run}_rss_before_mb"] for run, _ in runs)
    print(json.dumps(out))


CHILDREN: dict[str, Callable[..., None]] = {
    "calamine": child_calamine,
    "parse": child_parse,
    "copy": child_copy,
    "store": child_store,
}


def run_child(kind: str, *args: object, env: dict[str, str] | None = None) -> dict:
    """Runs one child; its stderr is shown when it fails."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"child {kind} exited with {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the parent -----------------------------------------------------------------------


def _load() -> str:
    load = os.getloadavg()
    return f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores"


def _copy_ratio(stored: dict, copy: dict) -> float:
    """A CSV round's figure: each import against the bare COPY of the very lines it
    writes, the lower of the two. The first import is a config's first list: its rows
    are made current as they are stored (their lines carry the moment, and the index of
    current entries takes every one), as are those of the COPY of current lines; the
    second is stored not current, as are those of the COPY of stored lines."""
    return min(
        copy["current_seconds"] / stored["first_seconds"],
        copy["stored_seconds"] / stored["second_seconds"],
    )


def _strict_ratio(stored: dict, copy: dict) -> float:
    """For reference: the COPY of stored lines (the cheaper kind) against the slower
    import, whichever kind of line that import writes."""
    return copy["stored_seconds"] / stored["slower"]


def _rounds(n: int) -> str:
    return f"{n} round" if n == 1 else f"{n} rounds"


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds:,.0f} rows/s"


def _cpu_line(xlsx_rounds: list) -> str:
    """The CPU the xlsx import used, and the ratio no rearrangement of that work could
    beat on this machine: all of it spread evenly over every core, nothing waiting."""
    median = statistics.median
    cores = len(os.sched_getaffinity(0))
    client = median(stored["slower_cpu_seconds"] for stored, _ in xlsx_rounds)
    server = [stored["slower_server_cpu_seconds"] for stored, _ in xlsx_rounds]
    if None in server:
        return (
            f"xlsx import CPU (each round's slower import, median): {client:.2f} s in the "
            f"importing process; the PostgreSQL server is not on this machine, so its share "
            f"is not counted"
        )
    floor = median(
        ((stored["slower_cpu_seconds"] + stored["slower_server_cpu_seconds"]) / cores)
        / alone["seconds"]
        for stored, alone in xlsx_rounds
    )
    return (
        f"xlsx import CPU (each round's slower import, median): {client:.2f} s in the "
        f"importing process + {median(server):.2f} s in its PostgreSQL backends; the same "
        f"work spread evenly over all {cores} cores of this machine would still take "
        f"{(client + median(server)) / cores:.2f} s: that / calamine alone {floor:.2f}x "
        f"(median of per-round ratios), xlsx_vs_calamine's floor however the import's "
        f"steps are overlapped, unless it does less work"
    )


def _limit_lines(kind: str, limits: dict) -> list[str]:
    """One line per default limit the file is over: what the bench did, and why the
    default is what it is."""
    lines = []
    mib = 2**20
    if limits["file_bytes"] > limits["file_default"]:
        lines.append(
            f"limit {kind}: {limits['file_setting']} raised from "
            f"{limits['file_default'] / mib:.0f} MiB to {limits['file_bytes'] / mib:.1f} MiB "
            f"(the file's size) for these imports, the COPY yardstick's parse and parse() "
            f"alone; the default is {WHY_FILE_CAP}"
        )
    if limits["message_bytes"] > limits["message_default"]:
        lines.append(
            f"limit {kind}: {limits['message_setting']} "
            f"{limits['message_default'] / mib:.0f} MiB not applied to the "
            f"{limits['message_bytes'] / mib:.1f} MiB message: the bench stores the message "
            f"row itself, where the listener would have to be given at least that much; "
            f"the default is there because {WHY_MESSAGE_CAP}"
        )
    if not lines:
        lines.append(f"limit {kind}: within the default file and message caps")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="xlsx data rows")
    parser.add_argument("--csv-rows", type=int, default=1_000_000, help="CSV data rows")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds of each file (medians)"
    )
    parser.add_argument("--quick", action="store_true", help="20k-row xlsx, 200k-row CSV, 1 round")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        CHILDREN[args.child[0]](*args.child[1:])
        return
    if args.quick:
        args.rows, args.csv_rows, args.rounds = 20_000, 200_000, 1
    print(f"load average at the start {_load()}", flush=True)
    interrupt_on_termination()

    production_key()  # for the migration and the children, which inherit it
    url = fresh_database(BENCH_DB, "bench/parse.py")
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            check=True,
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url},
        )
        with tempfile.TemporaryDirectory(prefix="pricefeed-bench-") as tmp:
            figures = measure(args, Path(tmp))
    finally:
        if args.keep:
            print(f"database {BENCH_DB} kept (--keep)")
        else:
            drop_database(BENCH_DB)
    report(args, figures)


def measure(args: argparse.Namespace, tmp: Path) -> dict:
    xlsx = tmp / "prices.xlsx"
    csv_path = tmp / "prices.csv"
    changed_csv = tmp / "prices-changed.csv"
    started = time.perf_counter()
    make_xlsx(xlsx, args.rows, args.seed)
    make_csv(csv_path, args.csv_rows, args.seed)
    make_changed_csv(csv_path, changed_csv, args.seed)
    print(
        f"generated {xlsx.stat().st_size / 2**20:.1f} MiB xlsx ({args.rows:,} rows x 8), "
        f"{csv_path.stat().st_size / 2**20:.1f} MiB cp1251 csv ({args.csv_rows:,} rows) and "
        f"its changed copy in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    # Each yardstick right next to what it measures, so that both see the same machine;
    # alternated, so that a slow spell does not fall on one side only.
    xlsx_rounds = []
    for i in range(1, args.rounds + 1):
        stored = run_child("store", f"xlsx round {i}", xlsx)
        alone = run_child("calamine", xlsx)
        xlsx_rounds.append((stored, alone))
        print(
            f"xlsx round {i}: import first {stored['first_seconds']:.2f} s, second "
            f"{stored['second_seconds']:.2f} s ({stored['rows']:,} rows "
            f"{stored['second_status']}, peak RSS {stored['peak_rss_mb']:.0f} MB); "
            f"python-calamine alone {alone['seconds']:.2f} s "
            f"({_rate(alone['rows'], alone['seconds'])}); ratio "
            f"{stored['slower'] / alone['seconds']:.2f}x",
            flush=True,
        )
    csv_rounds = []
    for i in range(1, args.rounds + 1):
        stored = run_child("store", f"csv round {i}", csv_path, changed_csv)
        copy = run_child("copy", csv_path)
        csv_rounds.append((stored, copy))
        print(
            f"csv  round {i}: import first {stored['first_seconds']:.2f} s, second "
            f"{stored['second_seconds']:.2f} s, changed {stored['changed_seconds']:.2f} s "
            f"({stored['rows']:,} rows {stored['second_status']}); bare COPY of current "
            f"lines {copy['current_seconds']:.2f} s, of stored lines "
            f"{copy['stored_seconds']:.2f} s; ratio {_copy_ratio(stored, copy):.2f}x (each "
            f"import against the COPY of its own lines; the stored lines' COPY against the "
            f"slower import {_strict_ratio(stored, copy):.2f}x)",
            flush=True,
        )
    ours = run_child("parse", xlsx)
    return {"xlsx": xlsx_rounds, "csv": csv_rounds, "parse": ours}


def report(args: argparse.Namespace, figures: dict) -> None:
    median = statistics.median
    xlsx_rounds, csv_rounds, ours = figures["xlsx"], figures["csv"], figures["parse"]
    alone0 = xlsx_rounds[0][1]
    copy0 = csv_rounds[0][1]
    print(
        f"peer python-calamine {alone0['version']} (python {alone0['python']}): "
        f"CalamineWorkbook.from_filelike over the file's bytes, the first sheet loaded, "
        f"iter_rows() to the end; no guard, conversion or database"
    )
    print(
        f"peer COPY: PostgreSQL {copy0['server']}, psycopg {copy0['psycopg']}: COPY text of "
        f"the rows parse() collected, made by pricefeed.imports.storage._copy_text, with "
        f"their extra values (storage.extra_tails) from the first row that has some on, "
        f"as the import writes them ({copy0.get('rich_rows', 0):,} of {copy0['rows']:,} "
        f"rows with the extra columns, through sql.COPY_RICH_ITEMS), "
        f"written in {COPY_WRITE_BYTES // 2**20} MiB pieces into the same items table, one "
        f"transaction, committed; twice, once per kind of line the import writes: current "
        f"(a config's first list, made current as stored: "
        f"{copy0.get('current_bytes', copy0['stored_bytes']) / 2**20:.1f} MiB) and stored "
        f"(a later list: {copy0['stored_bytes'] / 2**20:.1f} MiB); the BAR holds each "
        f"import against the COPY of the kind it writes (first: current, second: stored)"
    )
    for line in _limit_lines("csv", csv_rounds[0][0]["limits"]):
        print(line)
    for line in _limit_lines("xlsx", xlsx_rounds[0][0]["limits"]):
        print(line)

    rows = xlsx_rounds[0][0]["rows"]
    imports = [stored["slower"] for stored, _ in xlsx_rounds]
    ratios = [stored["slower"] / alone["seconds"] for stored, alone in xlsx_rounds]
    xlsx_s = median(imports)
    xlsx_rss = max(stored["peak_rss_mb"] for stored, _ in xlsx_rounds)
    alone_s = median(alone["seconds"] for _, alone in xlsx_rounds)
    print(
        f"xlsx import (each round's slower, median of {_rounds(len(imports))}): {xlsx_s:.2f} s, "
        f"{_rate(rows, xlsx_s)}, worst {max(imports):.2f} s; python-calamine alone median "
        f"{alone_s:.2f} s ({_rate(rows, alone_s)}; sheet loaded in "
        f"{median(alone['load_seconds'] for _, alone in xlsx_rounds):.2f} s of it)"
    )
    print(
        f"xlsx parse() alone: {ours['seconds']:.2f} s, {_rate(ours['rows'], ours['seconds'])}, "
        f"{ours['seconds'] / alone_s:.2f}x calamine alone (workbook guard "
        f"{ours['guard_seconds']:.2f} s of it), peak RSS {ours['peak_rss_mb']:.0f} MB"
    )
    print(_cpu_line(xlsx_rounds))

    csv_rows = csv_rounds[0][0]["rows"]
    first = median(stored["first_seconds"] for stored, _ in csv_rounds)
    second = median(stored["second_seconds"] for stored, _ in csv_rounds)
    changed = median(stored["changed_seconds"] for stored, _ in csv_rounds)
    slower = median(stored["slower"] for stored, _ in csv_rounds)
    copy_current = median(copy["current_seconds"] for _, copy in csv_rounds)
    copy_stored = median(copy["stored_seconds"] for _, copy in csv_rounds)
    copy_ratios = [_copy_ratio(stored, copy) for stored, copy in csv_rounds]
    last = csv_rounds[-1][0]
    diff = last["changed_diff"]
    print(
        f"csv  import medians: first {first:.2f} s ({_rate(csv_rows, first)}), second "
        f"{second:.2f} s ({_rate(csv_rows, second)}), slower of the two {slower:.2f} s "
        f"({_rate(csv_rows, slower)}; issue 3 asked 200,000 rows/s); peak RSS while "
        f"importing {max(s['peak_rss_mb'] for s, _ in csv_rounds):.0f} MB"
    )
    print(
        f"csv  bare COPY medians: current lines {copy_current:.2f} s "
        f"({_rate(csv_rows, copy_current)}), stored lines {copy_stored:.2f} s "
        f"({_rate(csv_rows, copy_stored)}); COPY of current lines / first import "
        f"{median(c['current_seconds'] / s['first_seconds'] for s, c in csv_rounds):.2f}x, "
        f"COPY of stored lines / second import "
        f"{median(c['stored_seconds'] / s['second_seconds'] for s, c in csv_rounds):.2f}x; "
        f"COPY of stored lines / slower import "
        f"{median(_strict_ratio(s, c) for s, c in csv_rounds):.2f}x (medians of per-round "
        f"ratios; the last one holds the cheaper kind of line against the dearer import: "
        f"not a BAR)"
    )
    print(
        f"csv  changed-list import median {changed:.2f} s "
        f"({_rate(last['changed_rows'], changed)}, {last['changed_status']}; diff by a join "
        f"of {csv_rows:,} x {last['changed_rows']:,} rows: {diff['added']:,} added, "
        f"{diff['removed']:,} removed, {diff['changed']:,} changed); not a BAR"
    )
    parse_s = median(copy["parse_seconds"] for _, copy in csv_rounds)
    print(
        f"csv  parse() alone (rows collected, from the COPY rounds) median {parse_s:.2f} s "
        f"({_rate(csv_rows, parse_s)}), peak RSS "
        f"{max(c['parse_peak_rss_mb'] for _, c in csv_rounds):.0f} MB; COPY text made in "
        f"{median(c['stored_text_seconds'] for _, c in csv_rounds):.2f} s (stored lines)"
    )
    print(
        f"machine speed: python-calamine alone {_rate(rows, alone_s)} (median; "
        f"compare ratios, not figures, between machines)"
    )
    print(f"load average at the end {_load()}")

    quick = args.quick
    # --quick's smaller file makes these bars indicative only: say what was measured.
    size = f"; here {args.rows:,} rows" if args.rows != 100_000 else ""
    print(
        bar_line(
            "xlsx_import_seconds",
            xlsx_s <= TARGET_XLSX_SECONDS,
            f"{xlsx_s:.2f} s",
            f"≤ {TARGET_XLSX_SECONDS:g} s for 100k rows, each round's slower import, median "
            f"of {_rounds(len(imports))}{size}",
            quick,
        )
    )
    print(
        bar_line(
            "xlsx_vs_calamine",
            median(ratios) <= TARGET_XLSX_VS_CALAMINE,
            f"{median(ratios):.2f}x",
            f"≤ {TARGET_XLSX_VS_CALAMINE:g}x, import / python-calamine alone over the same "
            f"sheet, median of {_rounds(len(ratios))}, worst {max(ratios):.2f}x{size}",
            quick,
        )
    )
    print(
        bar_line(
            "xlsx_peak_rss",
            xlsx_rss <= TARGET_XLSX_RSS_MB,
            f"{xlsx_rss:.0f} MB",
            f"≤ {TARGET_XLSX_RSS_MB} MB while importing, the worst import{size}",
            quick,
        )
    )
    print(
        bar_line(
            "csv_import_vs_copy",
            median(copy_ratios) >= TARGET_CSV_VS_COPY,
            f"{median(copy_ratios):.2f}x",
            f"≥ {TARGET_CSV_VS_COPY:g}x, bare COPY of the parsed rows as each import writes "
            f"them / that import: the lower of first (current lines) and second (stored "
            f"lines) in each round, median of "
            f"{_rounds(len(copy_ratios))}, worst {min(copy_ratios):.2f}x; "
            f"{csv_rows:,} rows",
            quick,
        )
    )


if __name__ == "__main__":
    main()
