#!/usr/bin/env python
"""Outbox benchmark: pricefeed's claim path and notifications against ceilings and peers.

    .venv/bin/python bench/outbox.py [--events 50000] [--mails 10000] [--big 1000000]

Uses DATABASE_URL (PostgreSQL) or the local server on 127.0.0.1:5432; works in its own
database ``pricefeed_bench_outbox`` (dropped, created, migrated with ``manage.py
migrate``, dropped again at the end unless --keep). Every peer runs in this one run
against the same server. Each worker is a process of its own, started, set up and
connected before the clock starts; the clock stops when the last worker is done.

1. N ``outbox.noop`` events, batches of 100, 2 worker processes:
   * pricefeed: ``events_claim`` → ``events_deliver`` in a loop until nothing is left, as
     the dispatcher and its django-q2 task do, without the django-q2 hop;
   * raw SQL ceiling: plain psycopg on a copy of the table (``LIKE … INCLUDING ALL``,
     so the same columns, defaults and indexes), autocommit and prepared statements
     (psycopg's default): one CTE ``SELECT … FOR UPDATE SKIP LOCKED`` + ``UPDATE …
     PROCESSING RETURNING`` the columns a handler needs (id, kind, payload, attempts),
     then one ``UPDATE … SENT WHERE id = ANY(…)``: two statements, two round trips and
     two commits per batch, the least that claims, hands over and records;
   * procrastinate: its own schema in the bench database, N jobs deferred with
     ``batch_defer`` (untimed), 2 worker processes each running
     ``run_worker_async(concurrency=1, wait=False, listen_notify=False,
     delete_jobs="never")`` with a PsycopgConnector and an async no-op task.
2. M notification mails (one PriceImport, M recipients) to pricefeed's aiosmtpd sink, a
   fresh sink for every peer, --sink-processes (2) aiosmtpd processes sharing its port
   (a single connection is served by one of them), each storing a mail in the Maildir
   before it answers 250, without fsync:
   * pricefeed: M ``notification.send`` events drained as in 1 with EMAIL_URL at the sink
     (Django's SMTP EmailBackend; each batch over a few reused connections);
   * raw smtplib on one reused connection, twice: sending the bytes pricefeed sends
     (``OutcomeMail``; building excluded), and building + serialising a stdlib
     ``EmailMessage`` per mail inside the loop (building included);
   * django-post_office (bench/outbox_postoffice_settings.py: its defaults, batch 100,
     5 threads a process, a Log row per mail): the same M mails queued with
     ``mail.send_many(…, priority="medium")`` (untimed), then ``send_queued_mail`` timed
     with ``--processes 1`` (its default) and 2.
   Every sink's Maildir is counted (mails and distinct Message-IDs) to prove delivery.
3. Latency of pricefeed's claim (limit 100) with 10k and with 1M SENT rows beside 1,000
   NEW ones after VACUUM ANALYZE: ``events_claim`` inside a transaction rolled back each
   time (begun before the clock starts: the statement's own round trip and execution are
   timed, as it runs in autocommit, not its commit), and its SELECT … SKIP LOCKED alone,
   p50/p99 over --claims executions (5,000), in rounds of 1,000 with a VACUUM between
   rounds (the rolled-back claims leave dead row versions that real, committed claims
   would leave to autovacuum); the plans, which must read the partial index and scan
   nothing else.

Prints figures only; no threshold is checked.
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

from bench.benchdb import production_key  # noqa: E402

BENCH_DB = "pricefeed_bench_outbox"
RAW_TABLE = "bench_raw_outbox"
BATCH = 100
WORKERS = 2
FROM = "pricefeed@buyer.test"
PROCRASTINATE_QUEUE = "bench"
PROCRASTINATE_TASK = "bench_noop"


# -- database ------------------------------------------------------------------------


def _database_urls() -> tuple[str, str]:
    import environ

    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    config = environ.Env.db_url_config(base)
    if "postgresql" not in config["ENGINE"]:
        sys.exit("bench/outbox.py needs PostgreSQL: set DATABASE_URL=postgres://...")
    return base, base.rsplit("/", 1)[0] + "/" + BENCH_DB


def _pg(url: str) -> str:
    """psycopg wants postgresql://; django-environ accepts both."""
    return re.sub(r"^postgres://", "postgresql://", url)


def _admin(admin_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_pg(admin_url), autocommit=True) as conn:
        conn.execute(sql)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


FILL = """
INSERT INTO {table} (id, kind, aggregate_type, aggregate_id, payload, status, attempts,
                     next_attempt_at, claimed_by, last_error, created_at, sent_at, finished_at)
SELECT gen_random_uuid(), %(kind)s, 'bench.anchor', g::text, jsonb_build_object('n', g),
       %(status)s, %(attempts)s, now() - %(age)s::interval + g * interval '1 millisecond',
       '', '', now(), CASE WHEN %(done)s THEN now() END, CASE WHEN %(done)s THEN now() END
FROM generate_series(1, %(count)s) AS g
"""


def _fill(conn, table: str, count: int, *, status: str = "NEW", age: str = "1 hour") -> None:
    """Inserts ``count`` events, due in ascending order (as publishing over time makes)."""
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
        },
    )


# -- worker processes ------------------------------------------------------------------
# The parent starts each worker as ``bench/outbox.py --role ROLE``; the worker sets itself
# up, prints READY, waits for "go" on stdin, works, and prints RESULT {json} with its own
# time.monotonic() at the end (CLOCK_MONOTONIC is one clock for the whole machine).


_cpu_at_go = 0.0


def _cpu() -> float:
    """CPU seconds of this process, its threads and its waited-for children."""
    import resource

    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _ready() -> None:
    global _cpu_at_go
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit("worker: no go")
    _cpu_at_go = _cpu()


def _result(**fields) -> None:
    fields["cpu_s"] = _cpu() - _cpu_at_go
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

    outcome_mail = notification_services.OutcomeMail
    outcome_mail.__init__ = timed("render", outcome_mail.__init__)
    outcome_mail.data = timed("build", outcome_mail.data)
    notification_services._send = timed("send", notification_services._send)
    smtplib.SMTP.sendmail = timed("smtp", smtplib.SMTP.sendmail)

    outcome: Counter[str] = Counter()
    batches = 0
    _ready()
    with connection.execute_wrapper(sql):
        while True:
            started = time.perf_counter()
            claim = services.new_claim_id(name)
            ids = services.events_claim(dispatcher=claim, limit=BATCH)
            claimed = time.perf_counter()
            spent["claim_s"] += claimed - started
            if not ids:
                break
            batches += 1
            outcome.update(services.events_deliver(event_ids=ids, dispatcher=claim))
            outcome["claimed"] += len(ids)
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


CLAIM_SQL = f"""
WITH c AS (
    SELECT id FROM {RAW_TABLE}
    WHERE status = 'NEW' AND next_attempt_at <= now()
    ORDER BY next_attempt_at, id
    LIMIT {BATCH}
    FOR UPDATE SKIP LOCKED
)
UPDATE {RAW_TABLE} AS t
SET status = 'PROCESSING', claimed_by = %s, claimed_at = now(), attempts = t.attempts + 1
FROM c WHERE t.id = c.id
RETURNING t.id, t.kind, t.payload, t.attempts
"""
SENT_SQL = f"""
UPDATE {RAW_TABLE}
SET status = 'SENT', sent_at = now(), finished_at = now(), claimed_by = '',
    claimed_at = NULL, last_error = ''
WHERE id = ANY(%s) AND status = 'PROCESSING' AND claimed_by = %s
"""


def _role_raw(name: str, url: str) -> None:
    """The ceiling: two statements, two round trips and two commits per batch (each
    statement autocommits), prepared after their fifth use; nothing else."""
    import uuid

    import psycopg

    handled = sent = batches = 0
    with psycopg.connect(_pg(url), autocommit=True) as conn:
        conn.execute("SELECT 1")
        _ready()
        while True:
            claim = f"{name}/{uuid.uuid4().hex[:12]}"
            ids = [row[0] for row in conn.execute(CLAIM_SQL, (claim,)).fetchall()]
            if not ids:
                break
            batches += 1
            handled += len(ids)
            sent += conn.execute(SENT_SQL, (ids, claim)).rowcount
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


# -- sections ------------------------------------------------------------------------------


def _checkpoint(conn) -> None:
    """Levels the ground between peers: no dirty pages or stale stats left behind."""
    conn.execute("VACUUM ANALYZE")
    conn.execute("CHECKPOINT")


def _rate_line(label: str, count: int, wall: float) -> str:
    return f"  {label:<34} {count:>7} in {wall:6.2f} s  {count / wall:8.0f} /s"


def section_noop(args, conn, env, tmp: Path, summary: list) -> None:
    n = args.events
    print(f"\n== 1. {n} no-op events, batch {BATCH}, {WORKERS} worker processes ==")

    # pricefeed
    _fill(conn, "outbox_outboxevent", n)
    _checkpoint(conn)
    wall, results = Peers("pricefeed", WORKERS, env, tmp).run()
    rows = conn.execute(
        "SELECT status, attempts, count(*) FROM outbox_outboxevent GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    pf_rate = n / wall
    print(_rate_line("pricefeed events_claim/deliver", n, wall))
    print(
        f"    per worker: claimed {[r['claimed'] for r in results]}, "
        f"sent {[r.get('sent', 0) for r in results]}; table {rows}"
    )
    print(_breakdown(results, n))

    # raw SQL ceiling on a copy of the table (same columns, defaults and indexes)
    conn.execute(f"CREATE TABLE {RAW_TABLE} (LIKE outbox_outboxevent INCLUDING ALL)")
    _fill(conn, RAW_TABLE, n)
    _checkpoint(conn)
    wall, results = Peers("raw", WORKERS, env, tmp, "--url", env["DATABASE_URL"]).run()
    raw_rows = conn.execute(
        f"SELECT status, attempts, count(*) FROM {RAW_TABLE} GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    raw_rate = n / wall
    print(_rate_line("raw SQL (psycopg, 2 stmts/batch)", n, wall))
    print(
        f"    per worker: claimed {[r['claimed'] for r in results]}, "
        f"sent {[r['sent'] for r in results]}; table {raw_rows}"
    )

    # procrastinate. It warns when its App lives in a __main__ module; here that is on purpose.
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    app, task = _procrastinate_app(env["DATABASE_URL"])
    with app.open():
        app.schema_manager.apply_schema()
        deferred_at = time.perf_counter()
        for start in range(0, n, 5000):
            task.batch_defer(*({"n": i} for i in range(start, min(n, start + 5000))))
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
    jobs = conn.execute(
        "SELECT status::text, attempts, count(*) FROM procrastinate_jobs GROUP BY 1, 2"
    ).fetchall()
    started, distinct = conn.execute(
        "SELECT count(*), count(DISTINCT job_id) FROM procrastinate_events WHERE type = 'started'"
    ).fetchone()
    pc_rate = n / wall
    print(_rate_line("procrastinate", n, wall))
    print(
        f"    per worker: task calls {[r['calls'] for r in results]}; jobs {jobs}; "
        f"'started' events {started} for {distinct} distinct jobs "
        f"(deferring {n} took {defer_s:.1f} s, untimed)"
    )
    print(
        f"  ratio pricefeed/raw {pf_rate / raw_rate:.2f}x (target >= 0.5x); "
        f"pricefeed/procrastinate {pf_rate / pc_rate:.1f}x (target >= 10x)"
    )
    summary += [
        ("1", "pricefeed no-op drain", n, n / pf_rate, pf_rate, ""),
        (
            "1",
            "raw SQL ceiling",
            n,
            n / raw_rate,
            raw_rate,
            f"pf/raw {pf_rate / raw_rate:.2f}x",
        ),
        ("1", "procrastinate", n, n / pc_rate, pc_rate, f"pf/pc {pf_rate / pc_rate:.1f}x"),
    ]


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
                price_import=price_import, recipient=f"buyer{i:05d}@buyer.test", kind="PARTIAL"
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
        key = (n.price_import_id, n.kind)
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


def section_mail(args, conn, env, tmp: Path, summary: list) -> None:
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


ROUND = 1000  # claims between two VACUUMs


def _claim_latency(claims: int, conn) -> dict:
    """Times pricefeed's events_claim (one statement: SELECT … FOR UPDATE SKIP LOCKED +
    UPDATE of 100 rows) in a transaction rolled back each time, then its SELECT alone,
    in rounds of ROUND with a VACUUM (``conn``, autocommit) before each; explains both."""
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

    def select_once(cursor) -> float:
        with transaction.atomic():
            cursor.execute("SELECT 1")
            started = time.perf_counter()
            cursor.execute(DUE_SQL, [BATCH])
            rows = cursor.fetchall()
            elapsed = time.perf_counter() - started
            assert len(rows) == BATCH
            transaction.set_rollback(True)
        return elapsed

    def rounds(once) -> tuple[list[float], list[float]]:
        values, p99s = [], []
        for start in range(0, claims, ROUND):
            conn.execute("VACUUM outbox_outboxevent")
            for _ in range(20):  # warm the caches after the VACUUM
                once()
            timed = [once() for _ in range(min(ROUND, claims - start))]
            values += timed
            p99s.append(percentile(timed, 99))
        return values, p99s

    full, full_p99s = rounds(claim_once)
    with connection.cursor() as cursor:
        select, select_p99s = rounds(lambda: select_once(cursor))
        plans = {}
        for label, sql, params in (
            ("claim", CLAIM_SQL, [BATCH, "bench/plan"]),
            ("select", DUE_SQL, [BATCH]),
        ):
            with transaction.atomic():
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plans[label] = [row[0] for row in cursor.fetchall()]
                transaction.set_rollback(True)
    return {
        "full": full,
        "full_p99s": full_p99s,
        "select": select,
        "select_p99s": select_p99s,
        "plans": plans,
    }


def section_claim(args, conn, summary: list) -> None:
    from outbox.sql import CLAIM as CLAIM_SQL

    print(f"\n== 3. claim latency (limit {BATCH}), 1,000 NEW rows beside many SENT ones ==")
    conn.execute("TRUNCATE outbox_outboxevent")
    results = {}
    have = 0
    for size in (10_000, args.big):
        started = time.perf_counter()
        _fill(conn, "outbox_outboxevent", size - have, status="SENT", age="60 days")
        if not have:
            _fill(conn, "outbox_outboxevent", 1000, status="NEW", age="10 minutes")
        have = size
        _checkpoint(conn)
        total, new = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE status = 'NEW') FROM outbox_outboxevent"
        ).fetchone()
        size_mb = conn.execute(
            "SELECT pg_total_relation_size('outbox_outboxevent') / 1048576.0"
        ).fetchone()[0]
        setup_s = time.perf_counter() - started
        r = _claim_latency(args.claims, conn)
        results[size] = r
        print(
            f"  {total - new} SENT + {new} NEW rows "
            f"({size_mb:.0f} MB with indexes, setup {setup_s:.1f} s), {len(r['full'])} claims:"
        )
        for label, values, p99s in (
            ("events_claim (one statement)", r["full"], r["full_p99s"]),
            ("its SELECT ... SKIP LOCKED", r["select"], r["select_p99s"]),
        ):
            print(
                f"    {label:<30} p50 {percentile(values, 50) * 1000:6.2f} ms  "
                f"p99 {percentile(values, 99) * 1000:6.2f} ms  "
                f"max {max(values) * 1000:6.2f} ms  mean {statistics.mean(values) * 1000:6.2f} ms"
                f"  (p99 per {ROUND}: {min(p99s) * 1000:.2f}-{max(p99s) * 1000:.2f} ms)"
            )
        for label, plan in r["plans"].items():
            scans = [line.strip() for line in plan if "Scan" in line]
            executed = next(line.strip() for line in plan if "Execution Time" in line)
            print(f"    {label} plan: {'; '.join(scans)}; {executed}")
            if any("Seq Scan" in line for line in scans) or not any(
                "outbox_new_due" in line for line in scans
            ):
                print(f"    WARNING: the {label} does not read only the partial index:")
                print("\n".join("      " + line for line in plan))
    print("  the claim statement pricefeed issues:")
    print("    " + " ".join(CLAIM_SQL.split()))
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
                f" (p99 per {ROUND}: {min(p99s) * 1000:.2f}-{max(p99s) * 1000:.2f})",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=50_000, help="no-op events per peer")
    parser.add_argument("--mails", type=int, default=10_000, help="notification mails per peer")
    parser.add_argument("--big", type=int, default=1_000_000, help="SENT rows, large table")
    parser.add_argument("--claims", type=int, default=5000, help="timed claims per size")
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
    parser.add_argument("--processes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--lockfile", help=argparse.SUPPRESS)
    parser.add_argument("--mails-file", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.role == "pricefeed":
        return _role_pricefeed(args.name)
    if args.role == "raw":
        return _role_raw(args.name, args.url)
    if args.role == "procrastinate":
        return _role_procrastinate(args.name, args.url, args.concurrency)
    if args.role == "postoffice":
        return _role_postoffice(args.mails_file, args.processes, args.lockfile)

    import psycopg

    began = time.perf_counter()
    admin_url, bench_url = _database_urls()
    _admin(admin_url, f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
    _admin(admin_url, f"CREATE DATABASE {BENCH_DB}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-outbox-"))
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
    from django.db import connections

    print(
        f"bench/outbox.py: database {BENCH_DB}, PostgreSQL "
        f"{psycopg.connect(_pg(bench_url)).info.server_version}, {os.cpu_count()} cores, "
        f"setup {time.perf_counter() - began:.1f} s"
    )
    summary: list[tuple] = []
    try:
        with psycopg.connect(_pg(bench_url), autocommit=True) as conn:
            if "1" in args.only:
                section_noop(args, conn, env, tmp, summary)
            if "2" in args.only:
                section_mail(args, conn, env, tmp, summary)
            if "3" in args.only:
                section_claim(args, conn, summary)
    finally:
        connections.close_all()
        if not args.keep:
            _admin(admin_url, f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept database {BENCH_DB} and {tmp}")

    print("\n== summary ==")
    print(f"  {'#':<2} {'peer':<30} {'items':>8} {'wall s':>8} {'items/s':>9}  note")
    for section, label, count, wall, rate, note in summary:
        wall_s = f"{wall:8.2f}" if wall is not None else " " * 8
        rate_s = f"{rate:9.0f}" if rate is not None else " " * 9
        print(f"  {section:<2} {label:<30} {count:>8} {wall_s} {rate_s}  {note}")
    print(f"  total bench time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
