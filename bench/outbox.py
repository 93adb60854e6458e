#!/usr/bin/env python
"""Outbox benchmark: pricefeed's real dispatch path and notifications against ceilings and peers.

    .venv/bin/python bench/outbox.py [--quick] [--events N] [--mails M] [--big B] [--keep]

Uses DATABASE_URL (PostgreSQL) or the local server on 127.0.0.1:5432; works in its own
database ``<DATABASE_URL's database>_bench_outbox`` (dropped, created, migrated with ``manage.py
migrate``, dropped again at the end, also after an error, Ctrl-C or SIGTERM, unless
--keep). Every peer runs in this one run against the same server. ``--quick`` is a pass
of about two minutes (20k events, 2k mails, 100k SENT rows, 2,000 claims, one round,
procrastinate on a tenth of the events); full: 50k, 10k, 1M, 5,000, two rounds.

1. N ``outbox.noop`` events:
   * pricefeed as production runs it: ``manage.py qcluster`` and one ``manage.py
     dispatch_outbox`` (the settings' defaults: batch PRICEFEED_OUTBOX_BATCH, 2
     django-q2 workers, database queue),
     started and warmed (1,000 events drained) first; N events published in one
     transaction with the NOTIFY of ``outbox.publish``; clocked from that commit to the
     last event's ``sent_at`` (PostgreSQL's clock);
   * raw SQL on a minimal outbox table (id, status, kind, payload, attempts, a partial
     index on the NEW rows), plain psycopg, 2 worker processes, autocommit: ``WITH c AS
     (SELECT … FOR UPDATE SKIP LOCKED) UPDATE … PROCESSING RETURNING``, then ``UPDATE …
     SENT``: the least a SKIP LOCKED outbox does, at batch 100 (the BAR line) and, for
     reference, at pricefeed's batch. It and pricefeed run alternately (--rounds); the
     best of each is compared;
   * for reference, pricefeed's services in a loop without django-q2 (2 processes:
     ``events_claim_batch`` → ``events_deliver_batch``, as dispatch_outbox and the
     deliver task call them), with where their time goes;
   * procrastinate: its own schema in the bench database, the jobs deferred with
     ``batch_defer`` (untimed), 2 worker processes each running
     ``run_worker_async(concurrency=1, wait=False, listen_notify=False,
     delete_jobs="never")`` with a PsycopgConnector and an async no-op task.
   Each worker process of the raw and procrastinate peers is started, set up and
   connected before the clock starts; the clock stops when the last one is done.
2. M notification mails (one PriceImport, M recipients) to pricefeed's aiosmtpd sink, a
   fresh sink for every peer, --sink-processes (2) aiosmtpd processes sharing its port
   (a single connection is served by one of them), each storing a mail in the Maildir
   before it answers 250, without fsync:
   * pricefeed: M ``notification.send`` events drained by its services as in the
     reference of 1 with EMAIL_URL at the sink (Django's SMTP EmailBackend; each batch
     over a few reused connections);
   * raw smtplib on one reused connection, twice: sending the bytes pricefeed sends
     (``OutcomeMail``; building excluded), and building + serialising a stdlib
     ``EmailMessage`` per mail inside the loop (building included);
   * django-post_office (bench/outbox_postoffice_settings.py: its defaults, batch 100,
     5 threads a process, a Log row per mail): the same M mails queued with
     ``mail.send_many(…, priority="medium")`` (untimed), then ``send_queued_mail`` timed
     with ``--processes 1`` (its default) and 2.
   Every sink's Maildir is counted (mails and distinct Message-IDs) to prove delivery.
3. Latency of pricefeed's claim (limit 100) with 10k and with 1M SENT rows beside 1,000
   NEW ones after VACUUM ANALYZE, filled as publishing makes them (time-ordered ids,
   the NEW events newer than the SENT ones), both in one run: the 10k table in public,
   the 1M one a copy of its definition (``LIKE … INCLUDING ALL``) in a schema of its
   own, chosen by ``search_path`` (the claim's SQL names no schema). ``events_claim``
   inside a transaction rolled back each time (begun before the clock starts: the
   statement's own round trip and execution are timed, as it runs in autocommit, not its
   commit), and its SELECT … SKIP LOCKED alone, --claims executions per size, the sizes
   in turn claim by claim (each on a connection of its own, so that its prepared
   statements stay planned), so that machine noise falls on both alike; in rounds of
   1,000 with a VACUUM of both tables before each (the rolled-back claims leave dead row
   versions that real, committed claims would leave to autovacuum); p50/p99 over all the
   claims of a size and the range of the rounds' p99s; the plans on each table, which
   must read the partial index and scan nothing else.

Prints figures, and one line per target: ``BAR <name> met|missed <figure> (target …)``
(``(quick)`` after it in a quick pass); nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import smtplib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bench_database,
    drop_database,
    fresh_database,
    interrupt_on_termination,
    process_cpu,
    production_key,
)

BENCH_DB = bench_database("outbox")
RAW_TABLE = "bench_raw_outbox"
BATCH = 100
WORKERS = 2
FROM = "pricefeed@buyer.test"
PROCRASTINATE_QUEUE = "bench"
PROCRASTINATE_TASK = "bench_noop"


# -- database ------------------------------------------------------------------------


def _pg(url: str) -> str:
    """psycopg wants postgresql://; django-environ accepts both."""
    return re.sub(r"^postgres://", "postgresql://", url)


def _server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(_pg(url)) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


# An event id as outbox.models.time_ordered_uuid makes it, from the time ``t``: the
# milliseconds in the first 48 bits of a random (version 4) UUID, version bits set to 7.
TIME_ORDERED_ID = """encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
    substring(int8send((extract(epoch FROM t) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
    52, 1), 53, 1), 'hex')::uuid"""

FILL = f"""
INSERT INTO {{table}} (id, kind, aggregate_type, aggregate_id, payload, status, attempts,
                     next_attempt_at, claimed_by, last_error, created_at, sent_at, finished_at)
SELECT {TIME_ORDERED_ID}, %(kind)s, 'bench.anchor', (%(first)s + g)::text,
       jsonb_build_object('n', g), %(status)s, %(attempts)s, t, '', '', t,
       CASE WHEN %(done)s THEN t END, CASE WHEN %(done)s THEN t END
FROM generate_series(1, %(count)s) AS g,
     LATERAL (SELECT now() - %(age)s::interval + g * interval '1 millisecond' AS t) AS at
"""


def _fill(
    conn, table: str, count: int, *, status: str = "NEW", age: str = "1 hour", first: int = 0
) -> None:
    """Inserts ``count`` events as publishing over time makes them: due in ascending
    order, ids in time order (pricefeed's), aggregates numbered on from ``first`` (an
    event's aggregate is a newer row than the older events')."""
    done = status in ("SENT", "FAILED")
    conn.execute(
        FILL.format(table=table),
        {
            "kind": "outbox.noop",
            "status": status,
            "attempts": 1 if done else 0,
            "age": age,
            "count": count,
            "done": done,
            "first": first,
        },
    )


# -- worker processes ------------------------------------------------------------------
# The parent starts each worker as ``bench/outbox.py --role ROLE``; the worker sets itself
# up, prints READY, waits for "go" on stdin, works, and prints RESULT {json} with its own
# time.monotonic() at the end (CLOCK_MONOTONIC is one clock for the whole machine).


_cpu_at_go = 0.0


def _ready() -> None:
    global _cpu_at_go
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit("worker: no go")
    _cpu_at_go = process_cpu()


def _result(**fields) -> None:
    fields["cpu_s"] = process_cpu() - _cpu_at_go
    print("RESULT " + json.dumps({**fields, "finished": time.monotonic()}), flush=True)


def _role_pricefeed(name: str) -> None:
    """Claims and delivers batches with pricefeed's services until nothing is left.

    Times, without changing what runs: every SQL statement (Django's execute_wrapper),
    rendering an outcome (OutcomeMail), filling a mail (OutcomeMail.data), handing a
    batch to SMTP (notifications' _send: the wall time the worker waits for its
    connections) and smtplib's sendmail (summed over the connections; wrapped in this
    process only)."""
    import threading

    import django

    django.setup()
    from django.db import connection

    import notifications.services as notification_services
    from outbox import services

    connection.ensure_connection()
    spent: Counter[str] = Counter()
    lock = threading.Lock()  # sendmail runs in several threads

    def timed(key: str, fn):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    spent[key + "_s"] += time.perf_counter() - started
                    spent[key + "_n"] += 1

        return wrapper

    def sql(execute, sql, params, many, context):
        return timed("db", execute)(sql, params, many, context)

    notification_services.render = timed("render", notification_services.render)
    prepared = notification_services.PreparedMail
    prepared.data = timed("build", prepared.data)
    notification_services._send = timed("send", notification_services._send)
    smtplib.SMTP.sendmail = timed("smtp", smtplib.SMTP.sendmail)

    outcome: Counter[str] = Counter()
    batches = 0
    _ready()
    with connection.execute_wrapper(sql):
        while True:
            started = time.perf_counter()
            claim = services.new_claim_id(name)
            batch = services.events_claim_batch(dispatcher=claim, limit=BATCH)
            claimed = time.perf_counter()
            spent["claim_s"] += claimed - started
            if not batch:
                break
            batches += 1
            outcome.update(services.events_deliver_batch(batch=batch, dispatcher=claim))
            outcome["claimed"] += len(batch)
            spent["deliver_s"] += time.perf_counter() - claimed
    _result(batches=batches, **spent, **outcome)


def _breakdown(results: list[dict], items: int) -> str:
    """Worker time per item, summed over the workers: where the time goes."""
    total = sum(r.get("claim_s", 0) + r.get("deliver_s", 0) for r in results)
    batches = sum(r["batches"] for r in results)
    parts = {
        "SQL": sum(r.get("db_s", 0) for r in results),
        "rendering": sum(r.get("render_s", 0) for r in results),
        "filling mails": sum(r.get("build_s", 0) for r in results),
        "waiting for SMTP": sum(r.get("send_s", 0) for r in results),
    }
    statements = sum(r.get("db_n", 0) for r in results)
    rest = total - sum(parts.values())
    shown = ", ".join(f"{k} {v / items * 1000:.2f}" for k, v in parts.items() if v)
    smtp = sum(r.get("smtp_s", 0) for r in results)
    overlap = f" (sendmail {smtp / items * 1000:.2f} ms, summed over connections)" if smtp else ""
    return (
        f"    worker time per item {total / items * 1000:.2f} ms = {shown}, "
        f"other Python {rest / items * 1000:.2f} ms{overlap}; "
        f"{statements / max(batches, 1):.0f} SQL statements per batch of {BATCH} "
        f"(claim {sum(r['claim_s'] for r in results) / max(batches, 1) * 1000:.1f} ms, "
        f"deliver {sum(r['deliver_s'] for r in results) / max(batches, 1) * 1000:.1f} ms "
        f"per batch)"
    )


# The minimal outbox the real path is measured against: the columns a claim and a
# handler need, and a partial index on the claimable rows, nothing else.
RAW_SCHEMA = f"""
CREATE TABLE {RAW_TABLE} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    status text NOT NULL DEFAULT 'NEW',
    kind text NOT NULL,
    payload jsonb NOT NULL,
    attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX {RAW_TABLE}_new ON {RAW_TABLE} (id) WHERE status = 'NEW';
"""
RAW_FILL = f"""
INSERT INTO {RAW_TABLE} (kind, payload)
SELECT 'outbox.noop', jsonb_build_object('n', g) FROM generate_series(1, %s) AS g
"""
CLAIM_SQL = f"""
WITH c AS (
    SELECT id FROM {RAW_TABLE} WHERE status = 'NEW' ORDER BY id LIMIT %s
    FOR UPDATE SKIP LOCKED
)
UPDATE {RAW_TABLE} AS t SET status = 'PROCESSING', attempts = t.attempts + 1
FROM c WHERE t.id = c.id
RETURNING t.id, t.kind, t.payload, t.attempts
"""
SENT_SQL = f"UPDATE {RAW_TABLE} SET status = 'SENT' WHERE id = ANY(%s) AND status = 'PROCESSING'"


def _role_raw(name: str, url: str, batch: int) -> None:
    """The ceiling: claim a batch (FOR UPDATE SKIP LOCKED → PROCESSING) and mark it SENT,
    two statements, two round trips and two commits per batch (each statement
    autocommits), prepared after their fifth use (psycopg's default); nothing else."""
    import psycopg

    handled = sent = batches = 0
    with psycopg.connect(_pg(url), autocommit=True) as conn:
        conn.execute("SELECT 1")
        _ready()
        while True:
            ids = [row[0] for row in conn.execute(CLAIM_SQL, (batch,)).fetchall()]
            if not ids:
                break
            batches += 1
            handled += len(ids)
            sent += conn.execute(SENT_SQL, (ids,)).rowcount
    _result(batches=batches, claimed=handled, sent=sent)


_noop_calls = 0


def _procrastinate_app(url: str):
    from procrastinate import App, PsycopgConnector

    # A small pool: the worker holds one connection per running job plus the heartbeat.
    app = App(connector=PsycopgConnector(conninfo=_pg(url), min_size=2, max_size=4))

    @app.task(name=PROCRASTINATE_TASK, queue=PROCRASTINATE_QUEUE)
    async def bench_noop(n: int) -> None:
        global _noop_calls
        _noop_calls += 1

    return app, bench_noop


def _role_procrastinate(name: str, url: str, concurrency: int) -> None:
    import asyncio

    app, _ = _procrastinate_app(url)

    async def main() -> None:
        async with app.open_async():
            await app.check_connection_async()
            await asyncio.to_thread(_ready)
            await app.run_worker_async(
                name=name,
                queues=[PROCRASTINATE_QUEUE],
                concurrency=concurrency,
                wait=False,  # stop once the queue is empty
                listen_notify=False,  # it never idles here: it fetches until empty
                install_signal_handlers=False,
                delete_jobs="never",  # keep the rows, to count them afterwards
            )

    asyncio.run(main())
    _result(calls=_noop_calls)


def _role_postoffice(mails_path: str, processes: int, lockfile: str) -> None:
    """Queues the prepared mails with post_office, then times ``send_queued_mail``."""
    import django

    django.setup()
    from django.core.management import call_command
    from post_office import mail
    from post_office.models import STATUS, Email

    Email.objects.all().delete()
    mails = json.loads(Path(mails_path).read_text())
    queued_at = time.perf_counter()
    for start in range(0, len(mails), 1000):
        mail.send_many(
            [
                {
                    "sender": FROM,
                    "recipients": [m["to"]],
                    "subject": m["subject"],
                    "message": m["text"],
                    "html_message": m["html"],
                    "headers": {"Message-ID": m["message_id"]},
                    "priority": "medium",
                }
                for m in mails[start : start + 1000]
            ]
        )
    queue_s = time.perf_counter() - queued_at
    _ready()
    call_command("send_queued_mail", processes=processes, lockfile=lockfile)
    names = {value: name for name, value in STATUS._asdict().items()}
    statuses = Counter(names.get(s, str(s)) for s in Email.objects.values_list("status", flat=True))
    _result(queue_s=queue_s, **statuses)


class Peers:
    """Worker processes of one role, released together."""

    def __init__(self, role: str, count: int, env: dict[str, str], log_dir: Path, *args: str):
        self.role = role
        self.log_path = log_dir / f"{role}.log"
        self.processes = []
        with open(self.log_path, "ab") as log:
            for i in range(count):
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, __file__, "--role", role, "--name", f"{role}-{i}", *args],
                        cwd=ROOT,
                        env=env,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=log,
                        text=True,
                    )
                )

    def _line(self, process, prefix: str) -> str:
        while True:
            line = process.stdout.readline()
            if not line:
                log = self.log_path.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"{self.role} worker exited without {prefix}:\n{log}")
            if line.startswith(prefix):
                return line[len(prefix) :].strip()

    def run(self) -> tuple[float, list[dict]]:
        """Waits until every worker is ready, starts them at once; (wall s, results)."""
        for process in self.processes:
            self._line(process, "READY")
        started = time.monotonic()
        for process in self.processes:
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [json.loads(self._line(p, "RESULT ")) for p in self.processes]
        for process in self.processes:
            process.wait(60)
        return max(r["finished"] for r in results) - started, results


# -- the SMTP sink -----------------------------------------------------------------------


class Sink:
    """pricefeed's aiosmtpd sink, writing to a Maildir: ``processes`` server processes
    sharing one port (the kernel spreads connections over them), the same for every
    peer; a single connection is served by one of them."""

    def __init__(self, tmp: Path, name: str, processes: int) -> None:
        from devkit.servers import free_port

        self.port = free_port()
        self.path = tmp / f"sink-{name}"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "devkit.servers.smtp",
                "--port",
                str(self.port),
                "--maildir",
                str(self.path),
                "--processes",
                str(processes),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        # Printed once every process listens.
        if "listening" not in self.process.stdout.readline():
            raise RuntimeError("SMTP sink did not start")
        socket.create_connection(("127.0.0.1", self.port), timeout=5).close()

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def received(self) -> tuple[int, set[str]]:
        """(mails stored, their distinct Message-IDs)."""
        ids: set[str] = set()
        files = list((self.path / "new").iterdir()) + list((self.path / "cur").iterdir())
        pattern = re.compile(rb"^Message-ID:\s*(\S+)", re.IGNORECASE | re.MULTILINE)
        for file in files:
            with open(file, "rb") as fh:
                head = fh.read(4096).split(b"\n\n", 1)[0]
            found = pattern.search(head)
            if found:
                ids.add(found.group(1).decode())
        return len(files), ids

    def cpu(self) -> float:
        """CPU seconds used so far by the sink's processes (Linux /proc)."""
        tick = os.sysconf("SC_CLK_TCK")
        pids = [self.process.pid]
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            pids += [int(pid) for pid in children.read_text().split()]
        total = 0.0
        for pid in pids:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
        return total

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


# -- the real path: manage.py qcluster + manage.py dispatch_outbox ------------------------

_children: list[subprocess.Popen] = []  # every long-lived process this bench started


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Starts a manage.py command in a process group of its own (qcluster forks workers),
    remembered so that it is stopped whatever happens."""
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), *command],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _children.append(process)
    return process


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM (both commands stop cleanly on it), then SIGKILL to the group of this one
    process the bench started."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # qcluster's orphaned workers, if any
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)
    if process in _children:
        _children.remove(process)


def _stop_all() -> None:
    for process in list(_children):
        _stop(process)


PUBLISH = f"""
WITH made AS (
    INSERT INTO outbox_outboxevent (id, kind, aggregate_type, aggregate_id, payload, status,
                                    attempts, next_attempt_at, claimed_by, last_error)
    SELECT {TIME_ORDERED_ID}, 'outbox.noop', %(marker)s, g::text,
           jsonb_build_object('n', g), 'NEW', 0, t, '', ''
    FROM generate_series(1, %(count)s) AS g,
         LATERAL (SELECT now() - interval '1 second' + g * interval '1 microsecond' AS t) AS at
    RETURNING 1
)
SELECT count(*), pg_notify('pricefeed_outbox', '') FROM made
"""


def _publish_and_drain(conn, count: int, marker: str, timeout: float) -> float:
    """Publishes ``count`` no-op events in one transaction (with the NOTIFY that
    ``outbox.publish`` sends on commit) and waits until every one is SENT. Returns the
    seconds from the commit to the last event's ``sent_at`` (both PostgreSQL's clock)."""
    with conn.transaction():
        conn.execute(PUBLISH, {"marker": marker, "count": count})
    committed = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    deadline = time.monotonic() + timeout
    # While NEW rows are left, the partial index answers at no cost; then the few
    # PROCESSING ones are counted on the whole table.
    while conn.execute(
        "SELECT EXISTS (SELECT 1 FROM outbox_outboxevent WHERE status = 'NEW')"
    ).fetchone()[0]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{marker}: NEW events left after {timeout:.0f} s")
        time.sleep(0.05)
    while True:
        left, last = conn.execute(
            "SELECT count(*) FILTER (WHERE status <> 'SENT'), max(sent_at) "
            "FROM outbox_outboxevent WHERE aggregate_type = %s",
            [marker],
        ).fetchone()
        if not left:
            return (last - committed).total_seconds()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{marker}: {left} events not SENT after {timeout:.0f} s")
        time.sleep(0.02)


def _real_path(conn, env, tmp: Path, n: int) -> tuple[float, dict]:
    """Drains ``n`` no-op events through ``manage.py dispatch_outbox`` and ``manage.py
    qcluster`` as production runs them (settings' defaults). Both are started and warmed
    (a first batch of events drained) before the clock starts."""
    conn.execute("TRUNCATE outbox_outboxevent, django_q_ormq, django_q_task")
    log = tmp / "real-path.log"
    cluster = _start(["qcluster"], env, log)
    dispatcher = _start(["dispatch_outbox"], env, log)
    try:
        _publish_and_drain(conn, 1000, "bench.warm", timeout=120)
        _checkpoint(conn)
        wall = _publish_and_drain(conn, n, "bench.drain", timeout=max(120, n / 500))
        tasks = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE NOT success) FROM django_q_task"
        ).fetchone()
        rows = conn.execute(
            "SELECT status, attempts, count(*) FROM outbox_outboxevent "
            "WHERE aggregate_type = 'bench.drain' GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
    finally:
        _stop(dispatcher)
        _stop(cluster)
    return wall, {"rows": rows, "tasks_saved": tasks[0], "tasks_failed": tasks[1]}


# -- sections ------------------------------------------------------------------------------


def _checkpoint(conn) -> None:
    """Levels the ground between peers: no dirty pages or stale stats left behind."""
    conn.execute("VACUUM ANALYZE")
    conn.execute("CHECKPOINT")


def _rate_line(label: str, count: int, wall: float) -> str:
    return f"  {label:<34} {count:>7} in {wall:6.2f} s  {count / wall:8.0f} /s"


def _version(package: str) -> str:
    from importlib.metadata import version

    return f"{package} {version(package)}"


def _raw_drain(conn, env, tmp: Path, n: int, batch: int) -> tuple[float, str]:
    """The minimal outbox drained by 2 raw psycopg workers; (wall s, what they did)."""
    conn.execute(f"DROP TABLE IF EXISTS {RAW_TABLE}")
    conn.execute(RAW_SCHEMA)
    conn.execute(RAW_FILL, [n])
    _checkpoint(conn)
    wall, results = Peers(
        "raw", WORKERS, env, tmp, "--url", env["DATABASE_URL"], "--batch", str(batch)
    ).run()
    rows = conn.execute(
        f"SELECT status, attempts, count(*) FROM {RAW_TABLE} GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    return wall, f"per worker: claimed {[r['claimed'] for r in results]}; table {rows}"


def section_noop(args, conn, env, tmp: Path, summary: list, bars: list) -> None:
    from django.conf import settings

    n = args.events
    product_batch = settings.PRICEFEED_OUTBOX_BATCH
    print(
        f"\n== 1. {n} no-op events: pricefeed's batch {product_batch}, raw SQL's {BATCH} "
        f"(and, for reference, {product_batch}) =="
    )

    # pricefeed as production runs it, and the minimal raw outbox, alternately.
    real_walls, raw_walls, raw_same_walls = [], [], []
    for round_ in range(args.rounds):
        wall, info = _real_path(conn, env, tmp, n)
        real_walls.append(wall)
        print(
            _rate_line(f"pricefeed dispatch_outbox + qcluster #{round_ + 1}", n, wall)
            + f"  table {info['rows']}; django-q2 tasks saved {info['tasks_saved']}"
            f" (failed {info['tasks_failed']})"
        )
        wall, note = _raw_drain(conn, env, tmp, n, BATCH)
        raw_walls.append(wall)
        print(_rate_line(f"raw SQL, minimal table #{round_ + 1}", n, wall) + "  " + note)
        if product_batch != BATCH:
            wall, note = _raw_drain(conn, env, tmp, n, product_batch)
            raw_same_walls.append(wall)
            print(_rate_line(f"  same, batch {product_batch}", n, wall) + "  " + note)
    pf_rate, raw_rate = n / min(real_walls), n / min(raw_walls)
    # The yardstick claims as many events at a time as pricefeed does: a raw outbox at
    # batch 100 against pricefeed at 500 would credit pricefeed with its batch size.
    bar_rate, bar_batch = raw_rate, BATCH
    if raw_same_walls:
        bar_rate, bar_batch = n / min(raw_same_walls), product_batch
        print(
            f"  pricefeed/raw {pf_rate / raw_rate:.2f}x with raw at batch {BATCH} (for reference)"
        )
    print(
        f"  pricefeed/raw {pf_rate / bar_rate:.2f}x (raw at pricefeed's batch {bar_batch}, "
        f"best of each)"
    )
    from outbox.dispatcher import LANES

    print(
        f"  pricefeed: {_version('Django')}, {_version('django-q2')}, the settings' "
        f"defaults: batch {settings.PRICEFEED_OUTBOX_BATCH}, {settings.Q_CLUSTER['workers']}"
        f" django-q2 workers, one dispatch_outbox ({LANES} claim loops on a backlog); "
        f"clock from the commit that publishes the events to the last sent_at"
    )
    print(
        f"  raw: {_version('psycopg')}, {WORKERS} worker processes, "
        f"table ({RAW_TABLE}: id, status, kind, payload, attempts, partial index on NEW), "
        f"claim … FOR UPDATE SKIP LOCKED → PROCESSING → SENT, autocommit"
    )

    # For reference: pricefeed's services called in a loop, without the django-q2 hop.
    conn.execute("TRUNCATE outbox_outboxevent")
    _fill(conn, "outbox_outboxevent", n)
    _checkpoint(conn)
    wall, results = Peers("pricefeed", WORKERS, env, tmp).run()
    print(_rate_line("pricefeed services, no django-q2 hop", n, wall))
    print(_breakdown(results, n))
    direct_rate = n / wall

    # procrastinate (~200 jobs/s here: in a quick pass a tenth as many jobs, its rate is
    # the same). It warns when its App lives in a __main__ module; here that is on purpose.
    jobs = n // 10 if args.quick else n
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    app, task = _procrastinate_app(env["DATABASE_URL"])
    with app.open():
        app.schema_manager.apply_schema()
        deferred_at = time.perf_counter()
        for start in range(0, jobs, 5000):
            task.batch_defer(*({"n": i} for i in range(start, min(jobs, start + 5000))))
        defer_s = time.perf_counter() - deferred_at
    _checkpoint(conn)
    wall, results = Peers(
        "procrastinate",
        WORKERS,
        env,
        tmp,
        "--url",
        env["DATABASE_URL"],
        "--concurrency",
        str(args.procrastinate_concurrency),
    ).run()
    statuses = conn.execute(
        "SELECT status::text, attempts, count(*) FROM procrastinate_jobs GROUP BY 1, 2"
    ).fetchall()
    pc_rate = jobs / wall
    print(_rate_line(_version("procrastinate"), jobs, wall))
    print(
        f"    {WORKERS} worker processes, run_worker_async(concurrency="
        f"{args.procrastinate_concurrency}, listen_notify=False), async no-op task; "
        f"jobs {statuses} (deferring {jobs} took {defer_s:.1f} s, untimed)"
    )
    summary += [
        ("1", "pricefeed dispatch+qcluster", n, n / pf_rate, pf_rate, "best of rounds"),
        ("1", "raw SQL, minimal table", n, n / raw_rate, raw_rate, "best of rounds"),
        ("1", "pricefeed, no django-q2 hop", n, n / direct_rate, direct_rate, "reference"),
        ("1", "procrastinate", jobs, jobs / pc_rate, pc_rate, ""),
    ]
    bars.append(
        (
            "outbox_drain_vs_raw",
            pf_rate / bar_rate >= 0.5,
            f"{pf_rate / bar_rate:.2f}x",
            f"target >= 0.5x the minimal raw outbox at the same batch, {bar_batch}",
        )
    )
    bars.append(
        (
            "outbox_drain_vs_procrastinate",
            pf_rate / pc_rate >= 10,
            f"{pf_rate / pc_rate:.1f}x",
            "target >= 10x",
        )
    )


def _prepare_notifications(m: int):
    """The minimum rows a notification points at, M notifications and M send events."""
    from mailboxes.models import InboundMessage, Mailbox
    from notifications.models import Notification
    from notifications.services import SEND_EVENT
    from outbox.models import OutboxEvent
    from pricefeed.models import PriceImport, PriceListConfig

    mailbox = Mailbox.objects.create(name="bench", host="127.0.0.1", username="bench")
    config = PriceListConfig.objects.create(
        mailbox=mailbox, name="ACME", sender_pattern="*@acme.test", filename_pattern="*.csv"
    )
    raw = b"From: Sales <sales@acme.test>\r\nSubject: Price list\r\n\r\nsee attachment\r\n"
    message = InboundMessage.objects.create(
        mailbox=mailbox,
        folder="INBOX",
        uidvalidity=1,
        uid=1,
        message_id="<price-1@acme.test>",
        from_address="sales@acme.test",
        from_header="Sales <sales@acme.test>",
        subject="Price list",
        raw=raw,
        size=len(raw),
        dedup_key="bench-1",
        status=InboundMessage.Status.DONE,
    )
    price_import = PriceImport.objects.create(
        message=message,
        config=config,
        attachment_key="part1",
        filename="price.csv",
        status=PriceImport.Status.PARTIAL,
        rows_total=1000,
        rows_ok=990,
        rows_failed=10,
        errors=[{"row": i, "error": "price is not a number"} for i in range(10)],
        diff={"previous_import": 1, "added": 5, "removed": 2, "changed": 40},
    )
    notifications = Notification.objects.bulk_create(
        [
            Notification(
                kind="import_outcome",
                price_import=price_import,
                recipient=f"buyer{i:05d}@buyer.test",
                outcome="PARTIAL",
            )
            for i in range(m)
        ],
        batch_size=2000,
    )
    OutboxEvent.objects.bulk_create(
        [
            OutboxEvent(
                kind=SEND_EVENT,
                aggregate_type="notifications.notification",
                aggregate_id=str(n.pk),
                payload={"notification_id": n.pk},
            )
            for n in notifications
        ],
        batch_size=2000,
    )


def _build_mails() -> tuple[list[dict], float, float]:
    """Every notification's mail as pricefeed sends it (OutcomeMail: the outcome rendered
    once, To / Message-ID / Date filled per mail): the same mails go to the raw loop and
    to post_office. Returns them, the cost per mail of that, and of build_email (the
    plain Django way: three templates, EmailMultiAlternatives, as_bytes) on a sample."""
    from notifications.models import Notification
    from notifications.services import OutcomeMail, build_email, message_id_for

    notifications = list(
        Notification.objects.select_related("price_import__config", "price_import__message")
    )
    started = time.perf_counter()
    for n in notifications[:500]:
        build_email(n, None).message().as_bytes(linesep="\r\n")
    plain = (time.perf_counter() - started) / max(min(len(notifications), 500), 1)
    mails = []
    outcomes: dict = {}
    started = time.perf_counter()
    for n in notifications:
        key = (n.price_import_id, n.outcome)
        if key not in outcomes:
            outcomes[key] = OutcomeMail(n.price_import)
        outcome = outcomes[key]
        message_id = message_id_for(n)
        mails.append(
            {
                "to": n.recipient,
                "subject": outcome.subject,
                "text": outcome.text,
                "html": outcome.html,
                "message_id": message_id,
                # As Django's SMTP backend sends it (CRLF line ends).
                "bytes": outcome.data(recipient=n.recipient, message_id=message_id),
            }
        )
    return mails, (time.perf_counter() - started) / max(len(mails), 1), plain


def _stdlib_message(m: dict):
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Subject"] = m["subject"]
    msg["From"] = FROM
    msg["To"] = m["to"]
    msg["Message-ID"] = m["message_id"]
    msg.set_content(m["text"])
    msg.add_alternative(m["html"], subtype="html")
    return msg


def _raw_smtp(sink: Sink, mails: list[dict], *, build: bool) -> tuple[float, float]:
    """Sends every mail over one connection; (seconds, of which building and serialising)."""
    from email.policy import SMTP

    smtp = smtplib.SMTP("127.0.0.1", sink.port, timeout=30)
    building = 0.0
    started = time.perf_counter()
    for m in mails:
        if build:
            built = time.perf_counter()
            data = _stdlib_message(m).as_bytes(policy=SMTP)
            building += time.perf_counter() - built
        else:
            data = m["bytes"]
        smtp.sendmail(FROM, [m["to"]], data)
    elapsed = time.perf_counter() - started
    smtp.quit()
    return elapsed, building


def _cpu_line(client_s: float, sink_s: float, m: int) -> str:
    """CPU per mail: the peer's own processes and threads, and the sink's (PostgreSQL's
    is not counted). With two cores shared by both, their sum bounds the rate."""
    return f"    CPU per mail: peer {client_s / m * 1000:.2f} ms, sink {sink_s / m * 1000:.2f} ms"


def _sink_line(sink: Sink, expected: set[str]) -> str:
    count, ids = sink.received()
    return (
        f"    sink received {count} mails, {len(ids)} distinct Message-IDs, "
        f"{len(ids & expected)} of the {len(expected)} expected"
    )


def section_mail(args, conn, env, tmp: Path, summary: list, bars: list) -> None:
    from notifications.models import Notification
    from notifications.services import SEND_EVENT
    from outbox.models import OutboxEvent

    m = args.mails
    print(
        f"\n== 2. {m} notification mails to an aiosmtpd sink (a fresh one for each peer, "
        f"{args.sink_processes} process(es) behind its port) =="
    )
    setup = time.perf_counter()
    _prepare_notifications(m)
    mails, build_s, plain_s = _build_mails()
    print(
        f"  setup {time.perf_counter() - setup:.1f} s; a mail as pricefeed makes it (outcome "
        f"rendered once, headers filled) costs {build_s * 1000:.3f} ms; the plain Django way "
        f"(3 templates + EmailMultiAlternatives + as_bytes) {plain_s * 1000:.2f} ms"
    )
    expected = {mail["message_id"] for mail in mails}
    sinks: list[Sink] = []
    try:
        # pricefeed
        sink = Sink(tmp, "pricefeed", args.sink_processes)
        sinks.append(sink)
        _checkpoint(conn)
        peers = Peers(
            "pricefeed", WORKERS, {**env, "EMAIL_URL": sink.url, "DEFAULT_FROM_EMAIL": FROM}, tmp
        )
        sink_cpu = sink.cpu()
        wall, results = peers.run()
        sink_cpu = sink.cpu() - sink_cpu
        pf_rate = m / wall
        print(_rate_line("pricefeed notification.send", m, wall))
        print(
            f"    per worker: sent {[r.get('sent', 0) for r in results]}, "
            f"retry {[r.get('retry', 0) for r in results]}; notifications SENT "
            f"{Notification.objects.filter(status=Notification.Status.SENT).count()}, "
            f"events SENT "
            f"{OutboxEvent.objects.filter(kind=SEND_EVENT, status='SENT').count()}"
        )
        print(_breakdown(results, m))
        print(_cpu_line(sum(r["cpu_s"] for r in results), sink_cpu, m))
        print(_sink_line(sink, expected))

        # raw smtplib, prebuilt bytes, one connection
        sink = Sink(tmp, "raw", args.sink_processes)
        sinks.append(sink)
        sink_cpu, own_cpu = sink.cpu(), time.process_time()
        elapsed, _ = _raw_smtp(sink, mails, build=False)
        own_cpu, sink_cpu = time.process_time() - own_cpu, sink.cpu() - sink_cpu
        raw_rate = m / elapsed
        print(_rate_line("raw smtplib, prebuilt bytes", m, elapsed))
        print(_cpu_line(own_cpu, sink_cpu, m))
        print(_sink_line(sink, expected))

        # raw smtplib, building a stdlib EmailMessage per mail, one connection
        sink = Sink(tmp, "raw-build", args.sink_processes)
        sinks.append(sink)
        elapsed, building = _raw_smtp(sink, mails, build=True)
        raw_build_rate = m / elapsed
        print(_rate_line("raw smtplib, builds EmailMessage", m, elapsed))
        print(
            f"    building + serialising a stdlib multipart/alternative EmailMessage: "
            f"{building / m * 1000:.2f} ms a mail ({building / elapsed:.0%} of the loop)"
        )
        print(_sink_line(sink, expected))

        # django-post_office, the same mails
        mails_path = tmp / "mails.json"
        mails_path.write_text(
            json.dumps([{k: v for k, v in x.items() if k != "bytes"} for x in mails])
        )
        po_rates = {}
        for processes in args.postoffice_processes:
            sink = Sink(tmp, f"postoffice-{processes}", args.sink_processes)
            sinks.append(sink)
            po_env = {
                **env,
                "EMAIL_URL": sink.url,
                "DEFAULT_FROM_EMAIL": FROM,
                "DJANGO_SETTINGS_MODULE": "bench.outbox_postoffice_settings",
            }
            _checkpoint(conn)
            peers = Peers(
                "postoffice",
                1,
                po_env,
                tmp,
                "--mails-file",
                str(mails_path),
                "--processes",
                str(processes),
                "--lockfile",
                str(tmp / f"post_office-{processes}"),
            )
            sink_cpu = sink.cpu()
            wall, results = peers.run()
            sink_cpu = sink.cpu() - sink_cpu
            po_rates[processes] = m / wall
            (result,) = results
            statuses = {
                k: v for k, v in result.items() if k not in ("finished", "queue_s", "cpu_s")
            }
            print(_rate_line(f"post_office send_queued_mail -p {processes}", m, wall))
            print(
                f"    Email rows by status {statuses} "
                f"(queueing {m} took {result['queue_s']:.1f} s, untimed)"
            )
            print(_cpu_line(result["cpu_s"], sink_cpu, m))
            print(_sink_line(sink, expected))
    finally:
        for sink in sinks:
            sink.stop()
    print(
        f"  ratio pricefeed/raw smtplib: {pf_rate / raw_rate:.2f}x against prebuilt bytes, "
        f"{pf_rate / raw_build_rate:.2f}x against the loop that builds (target >= 0.9x)"
    )
    print(
        "  ratio pricefeed/post_office: "
        + ", ".join(f"{pf_rate / rate:.2f}x vs -p {p}" for p, rate in po_rates.items())
        + " (target >= 2x)"
    )
    best_po = max(po_rates.values())
    bars.append(
        (
            "notifications_vs_smtplib",
            pf_rate / raw_rate >= 0.9,
            f"{pf_rate / raw_rate:.2f}x",
            "target >= 0.9x raw smtplib, one reused connection, prebuilt bytes",
        )
    )
    bars.append(
        (
            "notifications_vs_post_office",
            pf_rate / best_po >= 2,
            f"{pf_rate / best_po:.2f}x",
            "target >= 2x django-post_office send_queued_mail, its faster -p",
        )
    )
    summary += [
        ("2", "pricefeed notifications", m, m / pf_rate, pf_rate, ""),
        (
            "2",
            "raw smtplib, prebuilt",
            m,
            m / raw_rate,
            raw_rate,
            f"pf/raw {pf_rate / raw_rate:.2f}x",
        ),
        (
            "2",
            "raw smtplib, builds",
            m,
            m / raw_build_rate,
            raw_build_rate,
            f"pf/raw {pf_rate / raw_build_rate:.2f}x",
        ),
    ] + [
        ("2", f"post_office -p {p}", m, m / rate, rate, f"pf/po {pf_rate / rate:.2f}x")
        for p, rate in po_rates.items()
    ]


ROUND = 1000  # claims per table between two VACUUMs
BIG_SCHEMA = "bench_big"  # holds the copy of the outbox table with the many SENT rows


def _claim_latency(claims: int, conn, tables: dict[int, str]) -> dict[int, dict]:
    """Times pricefeed's events_claim (one statement: SELECT … FOR UPDATE SKIP LOCKED +
    UPDATE of 100 rows) in a transaction rolled back each time, then its SELECT alone,
    on every table of ``tables`` (size → schema): each table has a thread and a database
    connection of its own whose ``search_path`` picks it (the claim's SQL names no
    schema), and the claims go to the tables in turn, one by one, so that a moment of
    machine noise falls on the sizes alike. In rounds of ROUND claims per table, with a
    VACUUM (``conn``, autocommit) of every table before each. Explains both statements
    on each table."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection, transaction

    from outbox.services import events_claim
    from outbox.sql import CLAIM as CLAIM_SQL
    from outbox.sql import DUE as DUE_SQL

    def claim_once() -> float:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1")  # BEGIN is sent now, not inside the measurement
            started = time.perf_counter()
            ids = events_claim(dispatcher="bench/latency", limit=BATCH)
            elapsed = time.perf_counter() - started
            assert len(ids) == BATCH, len(ids)
            transaction.set_rollback(True)
        return elapsed

    def select_once() -> float:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            started = time.perf_counter()
            cursor.execute(DUE_SQL, [BATCH])
            rows = cursor.fetchall()
            elapsed = time.perf_counter() - started
            assert len(rows) == BATCH
            transaction.set_rollback(True)
        return elapsed

    def use(schema: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SET search_path TO {schema}, public")

    def explain() -> dict[str, list[str]]:
        plans = {}
        with connection.cursor() as cursor:
            for label, sql, params in (
                ("claim", CLAIM_SQL, [BATCH, "bench/plan"]),
                ("select", DUE_SQL, [BATCH]),
            ):
                with transaction.atomic():
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                    plans[label] = [row[0] for row in cursor.fetchall()]
                    transaction.set_rollback(True)
        return plans

    results = {
        size: {"full": [], "full_p99s": [], "select": [], "select_p99s": [], "plans": {}}
        for size in tables
    }
    threads = {size: ThreadPoolExecutor(max_workers=1) for size in tables}
    try:
        for size, schema in tables.items():
            threads[size].submit(use, schema).result()
        for label, once in (("full", claim_once), ("select", select_once)):
            for start in range(0, claims, ROUND):
                for schema in tables.values():
                    conn.execute(f"VACUUM {schema}.outbox_outboxevent")
                timed: dict[int, list[float]] = {size: [] for size in tables}
                for n in range(20 + min(ROUND, claims - start)):  # the first 20 warm up
                    for size, thread in threads.items():
                        elapsed = thread.submit(once).result()
                        if n >= 20:
                            timed[size].append(elapsed)
                for size, values in timed.items():
                    results[size][label] += values
                    results[size][label + "_p99s"].append(percentile(values, 99))
        for size, thread in threads.items():
            results[size]["plans"] = thread.submit(explain).result()
    finally:
        for thread in threads.values():
            thread.submit(lambda: connection.close()).result()  # that thread's own
            thread.shutdown()
    return results


def section_claim(args, conn, summary: list, bars: list) -> None:
    from outbox.sql import CLAIM as CLAIM_SQL

    print(f"\n== 3. claim latency (limit {BATCH}), 1,000 NEW rows beside many SENT ones ==")
    # Two tables of the same definition, measured alternately in one run: the 10k one in
    # public, the big one in a schema of its own (the claim's SQL names no schema).
    conn.execute("TRUNCATE outbox_outboxevent")
    conn.execute(f"DROP SCHEMA IF EXISTS {BIG_SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {BIG_SCHEMA}")
    conn.execute(
        f"CREATE TABLE {BIG_SCHEMA}.outbox_outboxevent (LIKE public.outbox_outboxevent "
        "INCLUDING ALL)"
    )
    tables = {10_000: "public", args.big: BIG_SCHEMA}
    for size, schema in tables.items():
        started = time.perf_counter()
        table = f"{schema}.outbox_outboxevent"
        # The SENT rows are older than the NEW ones, by time, id and aggregate.
        _fill(conn, table, size, status="SENT", age="60 days")
        _fill(conn, table, 1000, status="NEW", age="10 minutes", first=10**9)
        conn.execute(f"VACUUM ANALYZE {table}")
        total, new = conn.execute(
            f"SELECT count(*), count(*) FILTER (WHERE status = 'NEW') FROM {table}"
        ).fetchone()
        size_mb = conn.execute("SELECT pg_total_relation_size(%s) / 1048576.0", [table]).fetchone()[
            0
        ]
        print(
            f"  {schema}: {total - new} SENT + {new} NEW rows ({size_mb:.0f} MB with "
            f"indexes, setup {time.perf_counter() - started:.1f} s)"
        )
    conn.execute("CHECKPOINT")
    results = _claim_latency(args.claims, conn, tables)
    conn.execute(f"DROP SCHEMA {BIG_SCHEMA} CASCADE")
    print(
        f"  {args.claims} claims per size, alternately one by one, each size on a "
        f"connection of its own; a VACUUM of both tables every {ROUND}:"
    )
    for size, r in results.items():
        print(f"  {size // 1000}k SENT:")
        for label, values, p99s in (
            ("events_claim (one statement)", r["full"], r["full_p99s"]),
            ("its SELECT ... SKIP LOCKED", r["select"], r["select_p99s"]),
        ):
            print(
                f"    {label:<30} p50 {percentile(values, 50) * 1000:6.2f} ms  "
                f"p99 {percentile(values, 99) * 1000:6.2f} ms  "
                f"max {max(values) * 1000:6.2f} ms  mean {statistics.mean(values) * 1000:6.2f} ms"
                f"  (p99 per round: {min(p99s) * 1000:.2f}-{max(p99s) * 1000:.2f} ms)"
            )
        for label, plan in r["plans"].items():
            scans = [line.strip() for line in plan if "Scan" in line]
            executed = "; ".join(
                line.strip() for line in plan if "Execution Time" in line or "Planning" in line
            )
            buffers = next((line.strip() for line in plan if "Buffers" in line), "")
            print(f"    {label} plan: {'; '.join(scans)}; {buffers}; {executed}")
            if any("Seq Scan" in line for line in scans) or not any(
                "outbox_new_due" in line or "outboxevent_next_attempt_at" in line for line in scans
            ):
                print(f"    WARNING: the {label} does not read only the partial index:")
                print("\n".join("      " + line for line in plan))
    print("  the claim statement pricefeed issues:")
    print("    " + " ".join(CLAIM_SQL.split()))
    p99 = {size: percentile(r["full"], 99) * 1000 for size, r in results.items()}
    small, big = p99[10_000], p99[args.big]
    bars.append(("claim_p99_10k_sent", small <= 5, f"{small:.2f} ms", "target <= 5 ms"))
    bars.append(
        (
            "claim_p99_1m_sent",
            big <= 5,
            f"{big:.2f} ms at {args.big // 1000}k SENT",
            "target <= 5 ms at 1M SENT",
        )
    )
    growth = big / small - 1
    bars.append(
        (
            "claim_p99_flat",
            abs(growth) <= 0.2,
            f"{growth:+.0%} from 10k to {args.big // 1000}k SENT, measured alternately",
            "target within 20 %",
        )
    )
    for size, r in results.items():
        p99s = r["full_p99s"]
        summary.append(
            (
                "3",
                f"claim p50/p99 @ {size // 1000}k SENT",
                len(r["full"]),
                None,
                None,
                f"{percentile(r['full'], 50) * 1000:.2f}/{percentile(r['full'], 99) * 1000:.2f} ms"
                f" (p99 per round: {min(p99s) * 1000:.2f}-{max(p99s) * 1000:.2f})",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # Defaults: None = the full run's value, or --quick's.
    parser.add_argument("--events", type=int, help="no-op events per peer (50k; quick 20k)")
    parser.add_argument("--mails", type=int, help="notification mails per peer (10k; quick 2k)")
    parser.add_argument("--big", type=int, help="SENT rows, large table (1M; quick 100k)")
    parser.add_argument("--claims", type=int, help="timed claims per size (5,000; quick 2,000)")
    parser.add_argument(
        "--rounds", type=int, help="alternating rounds of the real path and raw SQL (2; quick 1)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a pass of about two minutes: smaller sizes"
    )
    parser.add_argument(
        "--procrastinate-concurrency", type=int, default=1, help="async jobs per worker process"
    )
    parser.add_argument(
        "--postoffice-processes",
        type=int,
        nargs="+",
        default=[1, 2],
        help="send_queued_mail --processes values to run (1 is its default)",
    )
    parser.add_argument(
        "--sink-processes",
        type=int,
        default=2,
        help="SMTP sink processes behind the one port every mail peer talks to",
    )
    parser.add_argument("--keep", action="store_true", help="keep the database and temp files")
    parser.add_argument("--only", choices=["1", "2", "3"], nargs="+", default=["1", "2", "3"])
    # Worker processes (started by the bench itself).
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--lockfile", help=argparse.SUPPRESS)
    parser.add_argument("--mails-file", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.role == "pricefeed":
        return _role_pricefeed(args.name)
    if args.role == "raw":
        return _role_raw(args.name, args.url, args.batch or BATCH)
    if args.role == "procrastinate":
        return _role_procrastinate(args.name, args.url, args.concurrency)
    if args.role == "postoffice":
        return _role_postoffice(args.mails_file, args.processes, args.lockfile)

    import psycopg

    for key, full, quick in (
        ("events", 50_000, 20_000),
        ("mails", 10_000, 2000),
        ("big", 1_000_000, 100_000),
        ("claims", 5000, 2000),
        ("rounds", 2, 1),
    ):
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    interrupt_on_termination()  # the finally below stops every process and drops the database

    began = time.perf_counter()
    bench_url = fresh_database(BENCH_DB, "bench/outbox.py")
    tmp = Path(tempfile.mkdtemp(prefix="bench-outbox-"))
    summary: list[tuple] = []
    bars: list[tuple] = []
    try:
        production_key()
        env = {
            **os.environ,
            "DATABASE_URL": bench_url,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "LOG_LEVEL": "WARNING",
            "PRICEFEED_Q_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(ROOT),
            "DEFAULT_FROM_EMAIL": FROM,
        }
        env.pop("EMAIL_URL", None)
        for key in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "LOG_LEVEL", "DEFAULT_FROM_EMAIL"):
            os.environ[key] = env[key]
        os.environ.pop("EMAIL_URL", None)
        manage = [sys.executable, str(ROOT / "manage.py"), "migrate", "--verbosity", "0"]
        subprocess.run(manage, cwd=ROOT, env=env, check=True)
        subprocess.run(
            [*manage, "post_office"],
            cwd=ROOT,
            env={**env, "DJANGO_SETTINGS_MODULE": "bench.outbox_postoffice_settings"},
            check=True,
        )
        import django

        django.setup()
        print(
            f"bench/outbox.py: database {BENCH_DB}, PostgreSQL "
            f"{_server_version(bench_url)}, {os.cpu_count()} cores, "
            f"setup {time.perf_counter() - began:.1f} s"
        )
        with psycopg.connect(_pg(bench_url), autocommit=True) as conn:
            if "1" in args.only:
                section_noop(args, conn, env, tmp, summary, bars)
            if "2" in args.only:
                section_mail(args, conn, env, tmp, summary, bars)
            if "3" in args.only:
                section_claim(args, conn, summary, bars)
    finally:
        _stop_all()
        if "django.db" in sys.modules:
            from django.db import connections

            connections.close_all()
        if not args.keep:
            drop_database(BENCH_DB)
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept database {BENCH_DB} and {tmp}")

    print("\n== summary ==")
    print(f"  {'#':<2} {'peer':<30} {'items':>8} {'wall s':>8} {'items/s':>9}  note")
    for section, label, count, wall, rate, note in summary:
        wall_s = f"{wall:8.2f}" if wall is not None else " " * 8
        rate_s = f"{rate:9.0f}" if rate is not None else " " * 9
        print(f"  {section:<2} {label:<30} {count:>8} {wall_s} {rate_s}  {note}")
    print(
        f"  total bench time {time.perf_counter() - began:.0f} s, load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print()
    for name, met, figure, target in bars:
        quick = " (quick)" if args.quick else ""
        print(f"BAR {name} {'met' if met else 'missed'} {figure} ({target}){quick}")


if __name__ == "__main__":
    main()
