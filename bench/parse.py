#!/usr/bin/env python
"""Parsing benchmark: the library's part of issue 3's speed and memory bars.

    .venv/bin/python bench/parse.py [--rows 100000] [--csv-rows 1000000] [--seed 3]
                                    [--rounds 3]

Generates, in a temporary directory and from a fixed seed, a 100k-row x 8-column xlsx
(openpyxl write_only, two title rows above the header) and a 1M-row cp1251 ';' CSV with
Russian numbers ("1 234,50"), then measures, in this one run and on these same files:

* each file through the whole import (pricefeed.imports.lifecycle.price_import_run on a fresh
  PostgreSQL database named after DATABASE_URL's plus "_bench_parse"): the stored raw
  message is read, the attachment cut out of it, parsed, COPYed into PriceItem, diffed,
  and the status, counts and outbox event committed. Twice per file: the first import of
  the config has nothing to diff against, the second diffs against the first. The
  figure held against the bars is the slower of the two. The second import holds the
  same rows as the first, which the diff tells from their digests without a join; so a
  third CSV import, with 1% of the prices changed, 0.5% of the rows gone and 5,000 new
  ones, measures the diff's join of 1M x 1M rows (printed beside the bar, not in it);
* the same xlsx through a plain openpyxl read-only loop, and the ratio of that to the
  xlsx import (the strict reading of issue 3: parse + store vs the openpyxl read). The
  machines here are shared: their speed drifts by a third within minutes. So the xlsx
  imports and the openpyxl loop alternate, ``--rounds`` times; each round's ratio is its
  openpyxl loop over its slower import, and every round is printed with the median;
* both files through pricefeed.parsing.parse() alone (no database), for reference;
* peak RSS (VmHWM, reset before each import) of the process while it imports, and of
  the parse alone.

Each measurement runs in a child process of its own, so that one file's memory does not
pollute another's figures. No thresholds: it prints figures (issue 3's bars beside them).
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

from bench.benchdb import production_key  # noqa: E402

WORDS = (
    "Кабель ВВГ-нг медный Розетка Выключатель Лампа светодиодная Автомат Щит "
    "Провод ПВС белый чёрный 3х2,5 IP44 накладной скрытый двойной"
).split()
BRANDS = ("IEK", "ABB", "Legrand", "Schneider", "EKF", "TDM")


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


def child(kind: str, path: str) -> None:
    """Runs in a fresh interpreter; prints one JSON line."""
    from pricefeed.parsing import Limits, ParseOptions, parse
    from pricefeed.parsing.workbook_guard import check_workbook

    data = Path(path).read_bytes()
    # A 1M-row CSV is ~75 MB, over the default 50 MiB attachment cap: the bench
    # measures speed, so it lifts that one cap.
    limits = Limits(max_file_bytes=max(Limits().max_file_bytes, len(data)))
    out: dict[str, float] = {"rss_before_mb": _peak_rss_mb(), "bytes": len(data)}
    if kind == "openpyxl":
        import io

        import openpyxl

        started = time.perf_counter()
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
        rows = sum(1 for _ in wb.worksheets[0].iter_rows(values_only=True))
        out["seconds"] = time.perf_counter() - started
        out["rows"] = rows
    else:
        started = time.perf_counter()
        result = parse(data, ParseOptions(), limits)
        out["seconds"] = time.perf_counter() - started
        out["rows"] = result.rows_total
        out["ok_rows"] = len(result.rows)
        out["peak_rss_mb"] = _peak_rss_mb()
        if kind == "xlsx":
            started = time.perf_counter()
            check_workbook(data, limits)
            out["guard_seconds"] = time.perf_counter() - started
    print(json.dumps(out))


def _base_database_url() -> str:
    return os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")


# Named after DATABASE_URL's database, so that people sharing one server (each with a
# database of their own) do not drop each other's bench database mid-run.
BENCH_DB = _base_database_url().rsplit("/", 1)[-1].split("?")[0] + "_bench_parse"


def _bench_database_url() -> str:
    return _base_database_url().rsplit("/", 1)[0] + "/" + BENCH_DB


def prepare_database() -> str:
    """Creates a fresh PostgreSQL database for the store figures; returns its URL."""
    import psycopg

    url = _bench_database_url()
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin.replace("postgres://", "postgresql://"), autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {BENCH_DB}")
    production_key()  # for this migrate and the children, which inherit it
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"],
        check=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url},
    )
    return url


def child_store(path: str, changed: str | None = None) -> None:
    """Parse + store through the real import service (PostgreSQL, COPY, diff): twice, so
    the second run also diffs the rows against the first; a third time with ``changed``,
    when given."""
    import hashlib
    import uuid

    os.environ["DATABASE_URL"] = _bench_database_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings

    from devkit.samples import supplier_email
    from mailboxes.models import InboundMessage, Mailbox
    from pricefeed.imports import lifecycle
    from pricefeed.models import PriceImport, PriceListConfig

    data = Path(path).read_bytes()
    settings.PRICEFEED_PARSE_MAX_FILE_BYTES = max(
        settings.PRICEFEED_PARSE_MAX_FILE_BYTES, len(data)
    )
    settings.PRICEFEED_PARSE_MAX_TOTAL_INFLATED = max(
        settings.PRICEFEED_PARSE_MAX_TOTAL_INFLATED, 4 * len(data)
    )
    name = Path(path).name
    mailbox, _ = Mailbox.objects.get_or_create(
        name="bench", defaults={"host": "localhost", "username": "u", "password": "p"}
    )
    config, _ = PriceListConfig.objects.get_or_create(mailbox=mailbox, name=name)
    out: dict[str, float] = {}
    runs = [("first", data), ("second", data)]
    if changed:
        runs.append(("changed", Path(changed).read_bytes()))
    for run, payload in runs:
        raw = supplier_email(subject=run, attachments=[(name, payload)])
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
        started = time.perf_counter()
        status = lifecycle.price_import_run(import_id=price_import.pk, worker="bench")
        out[f"{run}_seconds"] = time.perf_counter() - started
        out[f"{run}_peak_rss_mb"] = _peak_rss_mb()
        price_import.refresh_from_db()
        if run != "changed":
            out["rows"] = price_import.rows_ok
        out[f"{run}_rows"] = price_import.rows_ok
        out[f"{run}_status"] = status
        out[f"{run}_diff"] = {k: price_import.diff.get(k) for k in ("added", "removed", "changed")}
    out["peak_rss_mb"] = max(out[f"{run}_peak_rss_mb"] for run, _ in runs)
    out["rss_before_mb"] = max(out[f"{run}_rss_before_mb"] for run, _ in runs)
    print(json.dumps(out))


def run_child(kind: str, path: Path, *more: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path), *map(str, more)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="xlsx data rows")
    parser.add_argument("--csv-rows", type=int, default=1_000_000, help="CSV data rows")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--rounds", type=int, default=3, help="xlsx import / openpyxl loop rounds (median)"
    )
    parser.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "store":
            child_store(*args.child[1:])
        else:
            child(*args.child)
        return
    store_db = prepare_database()

    with tempfile.TemporaryDirectory(prefix="pricefeed-bench-") as tmp:
        xlsx = Path(tmp) / "prices.xlsx"
        csv_path = Path(tmp) / "prices.csv"
        changed_csv = Path(tmp) / "prices-changed.csv"
        started = time.perf_counter()
        make_xlsx(xlsx, args.rows, args.seed)
        make_csv(csv_path, args.csv_rows, args.seed)
        make_changed_csv(csv_path, changed_csv, args.seed)
        print(
            f"generated {xlsx.stat().st_size / 2**20:.1f} MiB xlsx ({args.rows:,} rows x 8) and "
            f"{csv_path.stat().st_size / 2**20:.1f} MiB cp1251 csv ({args.csv_rows:,} rows) "
            f"in {time.perf_counter() - started:.1f} s"
        )
        # The openpyxl loop right next to the xlsx imports, so that both see the same
        # machine; alternated, so that a slow spell does not fall on one side only.
        rounds = []
        for _ in range(args.rounds):
            rounds.append((run_child("store", xlsx), run_child("openpyxl", xlsx)))
        stored_csv = run_child("store", csv_path, changed_csv)
        ours = run_child("xlsx", xlsx)
        text = run_child("csv", csv_path)

    def line(label: str, figures: dict) -> str:
        return (
            f"first {figures['first_seconds']:.2f} s "
            f"({figures['rows'] / figures['first_seconds']:,.0f} rows/s), second (same rows) "
            f"{figures['second_seconds']:.2f} s "
            f"({figures['rows'] / figures['second_seconds']:,.0f} rows/s); "
            f"{figures['rows']:,} rows {figures['second_status']}"
        )

    def slower(figures: dict) -> float:
        return max(figures["first_seconds"], figures["second_seconds"])

    csv_s = max(stored_csv["first_seconds"], stored_csv["second_seconds"])
    for i, (stored, plain) in enumerate(rounds, 1):
        print(f"xlsx  round {i} import           : {line('xlsx', stored)}")
        print(
            f"xlsx  round {i} openpyxl loop    : {plain['seconds']:.2f} s, "
            f"{plain['rows'] / plain['seconds']:,.0f} rows/s; ratio "
            f"{plain['seconds'] / slower(stored):.1f}x"
        )
    ratios = [plain["seconds"] / slower(stored) for stored, plain in rounds]
    imports = [slower(stored) for stored, _ in rounds]
    xlsx_s = statistics.median(imports)
    rows = rounds[0][0]["rows"]
    openpyxl_rate = statistics.median(plain["rows"] / plain["seconds"] for _, plain in rounds)
    print(
        f"xlsx  BAR import <= 3 s        : {xlsx_s:.2f} s median, {max(imports):.2f} s worst "
        f"({rows / xlsx_s:,.0f} rows/s; each round's slower import)"
    )
    print(
        f"xlsx  BAR ratio >= 10x         : {statistics.median(ratios):.1f}x median, "
        f"{min(ratios):.1f}x worst round (openpyxl loop / import parse + store)"
    )
    print(
        f"xlsx  BAR peak RSS <= 250 MB   : "
        f"{max(stored['peak_rss_mb'] for stored, _ in rounds):.0f} MB (the process while it "
        f"imports, at most {max(stored['rss_before_mb'] for stored, _ in rounds):.0f} MB "
        f"before an import)"
    )
    print(f"csv   import (parse + store)   : {line('csv', stored_csv)}")
    print(
        f"csv   BAR >= 200,000 rows/s    : {stored_csv['rows'] / csv_s:,.0f} rows/s "
        f"({csv_s:.2f} s, the slower of the two imports; peak RSS while importing "
        f"{stored_csv['peak_rss_mb']:.0f} MB, {stored_csv['rss_before_mb']:.0f} MB before)"
    )
    diff = stored_csv["changed_diff"]
    print(
        f"csv   import, prices changed   : {stored_csv['changed_seconds']:.2f} s "
        f"({stored_csv['changed_rows'] / stored_csv['changed_seconds']:,.0f} rows/s, "
        f"{stored_csv['changed_status']}; diff by a join of 1M x 1M rows: "
        f"{diff['added']:,} added, {diff['removed']:,} removed, {diff['changed']:,} changed)"
    )
    print(
        f"xlsx  parse() alone            : {ours['seconds']:.2f} s, "
        f"{ours['rows'] / ours['seconds']:,.0f} rows/s, "
        f"{rows / openpyxl_rate / ours['seconds']:.1f}x "
        f"openpyxl (workbook guard {ours['guard_seconds']:.2f} s of it), peak RSS "
        f"{ours['peak_rss_mb']:.0f} MB"
    )
    print(
        f"csv   parse() alone            : {text['seconds']:.2f} s, "
        f"{text['rows'] / text['seconds']:,.0f} rows/s, peak RSS {text['peak_rss_mb']:.0f} MB"
    )
    print(
        f"machine speed                  : openpyxl loop {openpyxl_rate:,.0f} rows/s (median); "
        f"FIELD-NOTES.md measured 5,000-8,500 rows/s on this kind of machine"
    )
    load = os.getloadavg()
    print(
        f"(database {store_db.rsplit('/', 1)[-1]}; load average at the end "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
