#!/usr/bin/env python
"""End to end: supplier's APPEND → recorded → import finished → notification at the sink.

    .venv/bin/python bench/e2e.py [--messages 40] [--rows 2000] [--brokers orm-poll,orm,redis]

Runs the whole pipeline as production does, one message at a time: a private Dovecot,
``manage.py listen_mail``, ``qcluster`` (PRICEFEED_Q_WORKERS, 2 by default),
``dispatch_outbox`` and an SMTP sink (devkit.servers.smtp), on a database of its own
(``<DATABASE_URL's database>_bench_e2e``, dropped at the end) and, for the Redis broker, a private
``redis-server``. Each message carries an xlsx price list of ``--rows`` rows, matched by
one config, with one subscriber. Three brokers, in turn: the peer, django-q2's own
database queue (``PRICEFEED_Q_WAKE=false``: its workers poll); pricefeed's database
queue (workers woken by NOTIFY, core/taskqueue.py); Redis.

Per message it takes these moments, all on this host's clock:

* APPEND returned (this script);
* recorded: ``InboundMessage.received_at`` (listen_mail's recording transaction);
* import created (process_message ran), import started (run_import claimed it), import
  finished (its transaction);
* at the sink: the SMTP sink stored the notification (the time in its Maildir name).

APPEND → recorded holds the IMAP server's own push delay, which no client can shorten
(Dovecot waits 500 ms before it tells an idling client). It is measured apart, in the
same run: an idle client of this script on a folder nobody else touches notes when each
EXISTS arrives after an APPEND there.

It prints each hop's p50/p95 per broker and one line per target: the p50 of APPEND →
at the sink, minus the p50 of the server's push delay, ≤ 300 ms
(``BAR e2e_<broker> met|missed <figure>``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
)

BENCH_DB = bench_database("e2e")
TARGET_MS = 300.0

PUSH_FOLDER = "PushDelay"
PEER = "orm-poll"
BROKERS = {
    PEER: "database queue, django-q2's own broker (workers poll every PRICEFEED_Q_POLL)",
    "orm": "database queue, pricefeed's broker (workers woken by NOTIFY)",
    "redis": "Redis (a private redis-server)",
}

HOPS = [
    ("recorded", "APPEND → recorded (server's push, listen_mail)"),
    ("created", "recorded → import created (process_message)"),
    ("started", "created → import started (run_import)"),
    ("finished", "started → import finished (parse, store)"),
    ("sink", "finished → notification at the sink (outbox, SMTP)"),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class PushWatcher:
    """An IMAP connection idling on a folder of its own, noting when each EXISTS arrives:
    the server's push delay, free of what the pipeline's own session does (Dovecot
    coalesces a session's change notifications, so an idler beside the listener would
    sometimes hear of a message early)."""

    def __init__(self, host: str, port: int, user: str, password: str, folder: str) -> None:
        from imapclient import IMAPClient

        self.client = IMAPClient(host, port=port, ssl=False, timeout=10)
        self.client.login(user, password)
        self.base = int(self.client.select_folder(folder, readonly=True)[b"EXISTS"])
        self.seen: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PushWatcher:
        self.client.idle()
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self.stop.is_set():
            for response in self.client.idle_check(timeout=0.2):
                if len(response) >= 2 and response[1] == b"EXISTS":
                    self.seen.setdefault(int(response[0]), time.time())

    def pushed(self, count: int, timeout: float = 30.0) -> float | None:
        """When the folder's ``count``-th message was announced (None: never)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if count in self.seen:
                return self.seen[count]
            time.sleep(0.002)
        return None

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        try:
            self.client.idle_done()
            self.client.logout()
        except Exception:  # the server may be gone already
            pass


def push_delays(dovecot: Any, appender: Any, raw: bytes, count: int, gap: float) -> list[float]:
    """The server's own push delay: APPEND → EXISTS at an idle client, on a folder no
    other session touches."""
    dovecot.create_folder("pricefeed", PUSH_FOLDER)
    watcher = PushWatcher(dovecot.host, dovecot.port, "pricefeed", "secret", PUSH_FOLDER).start()
    delays = []
    try:
        time.sleep(0.5)
        for i in range(count):
            appender.append(raw, PUSH_FOLDER)
            appended = time.time()
            pushed = watcher.pushed(watcher.base + i + 1)
            if pushed is not None:
                delays.append(pushed - appended)
            time.sleep(gap)
    finally:
        watcher.close()
    return delays


@dataclass
class Run:
    broker: str
    hops: dict[str, list[float]] = field(default_factory=lambda: {h: [] for h, _ in HOPS})
    push: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    lost: int = 0


def sink_times(maildir: Path) -> list[float]:
    """When the sink stored each message, from its Maildir names (``<time_ns>.P…``)."""
    return sorted(int(name.split(".", 1)[0]) / 1e9 for name in os.listdir(maildir / "new"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_broker(broker: str, args: argparse.Namespace, bench_url: str) -> Run:
    from django.db import close_old_connections

    from devkit.samples import price_list_xlsx, price_rows, supplier_email
    from devkit.servers import ImapAppender
    from devkit.servers.dovecot import DovecotServer
    from devkit.servers.processes import ManagedProcess, wait_until
    from devkit.servers.redis import RedisServer
    from mailboxes.models import InboundMessage, Mailbox
    from notifications.models import Subscription
    from pricefeed.models import PriceImport, PriceListConfig

    run = Run(broker)
    work = Path(tempfile.mkdtemp(prefix=f"pricefeed-e2e-{broker}-"))
    maildir = work / "sink"
    dovecot = DovecotServer()
    redis = RedisServer() if broker == "redis" else None
    processes: list[ManagedProcess] = []
    sink = None
    try:
        dovecot.start()
        if redis is not None:
            redis.start()
        smtp_port = free_port()
        sink_command = ["-m", "devkit.servers.smtp", "--port", str(smtp_port)]
        sink = subprocess.Popen(
            [sys.executable, *sink_command, "--maildir", str(maildir)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        mailbox = Mailbox.objects.create(
            name=f"e2e {broker}",
            host=dovecot.host,
            port=dovecot.port,
            security="plain",
            username="pricefeed",
            password="secret",
        )
        PriceListConfig.objects.create(
            mailbox=mailbox,
            name=f"e2e {broker}",
            sender_pattern="*@acme.test",
            filename_pattern="*.xlsx",
        )
        Subscription.objects.create(email="buyer@buyer.test")
        env = {
            **os.environ,
            "DATABASE_URL": bench_url,
            "LOG_LEVEL": os.environ.get("E2E_LOG_LEVEL", "WARNING"),
            "EMAIL_URL": f"smtp://127.0.0.1:{smtp_port}",
            "DEFAULT_FROM_EMAIL": "pricefeed@buyer.test",
        }
        if redis is not None:
            env["PRICEFEED_REDIS_URL"] = redis.url
        else:
            env.pop("PRICEFEED_REDIS_URL", None)
        # The peer: django-q2's own database queue, whose workers poll.
        env["PRICEFEED_Q_WAKE"] = "false" if broker == PEER else "true"
        for command in ("listen_mail", "qcluster", "dispatch_outbox"):
            processes.append(ManagedProcess(command, [command], env, work).start())
        wait_until(lambda: mailbox.checkpoints.exists(), 60, "listener connected")
        attachment = price_list_xlsx(price_rows(args.rows))
        appender = ImapAppender(dovecot.host, dovecot.port, "pricefeed", "secret").open()
        run.push = push_delays(
            dovecot, appender, supplier_email(subject="push"), args.push_samples, args.gap
        )

        for i in range(args.warmup + args.messages):
            message_id = f"<e2e-{broker}-{i}@acme.test>"
            raw = supplier_email(
                subject=f"e2e {i}", message_id=message_id, attachments=[("price.xlsx", attachment)]
            )
            appender.append(raw)
            appended = time.time()
            try:
                wait_until(lambda n=i: len(sink_times(maildir)) > n, 60, "notification at the sink")
            except Exception:  # counted and reported, the run goes on
                run.lost += 1
                continue
            at_sink = sink_times(maildir)[i]
            close_old_connections()
            message = InboundMessage.objects.get(message_id=message_id)
            price_import = PriceImport.objects.get(message=message)
            if i < args.warmup:
                continue
            moments = {
                "recorded": message.received_at.timestamp(),
                "created": price_import.created_at.timestamp(),
                "started": price_import.started_at.timestamp(),
                "finished": price_import.finished_at.timestamp(),
                "sink": at_sink,
            }
            before = appended
            for hop, _ in HOPS:
                run.hops[hop].append(moments[hop] - before)
                before = moments[hop]
            run.total.append(at_sink - appended)
            time.sleep(args.gap)
        appender.close()
        return run
    finally:
        for process in processes:
            process.stop(grace=30)
        if sink is not None:
            sink.terminate()
            sink.wait(10)
        if redis is not None:
            redis.stop()
        dovecot.cleanup()
        if os.environ.get("E2E_KEEP"):
            print(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(run: Run) -> float | None:
    print(
        f"\n{run.broker}: {BROKERS[run.broker]}; "
        f"{len(run.total)} messages measured, {run.lost} lost"
    )
    if not run.total or not run.push:
        return None
    push50 = percentile(run.push, 50) * 1000
    print(
        f"  the server's push delay (idle client on a folder of its own, {len(run.push)} "
        f"messages): p50 {push50:.0f} ms, p95 {percentile(run.push, 95) * 1000:.0f} ms"
    )
    width = max(len(title) for _, title in HOPS)
    for hop, title in HOPS:
        values = run.hops[hop]
        print(
            f"  {title:<{width}}  p50 {percentile(values, 50) * 1000:6.0f} ms"
            f"  p95 {percentile(values, 95) * 1000:6.0f} ms"
        )
    total50 = percentile(run.total, 50) * 1000
    print(
        f"  {'APPEND → notification at the sink':<{width}}  p50 {total50:6.0f} ms"
        f"  p95 {percentile(run.total, 95) * 1000:6.0f} ms"
        f"  (mean {statistics.mean(run.total) * 1000:.0f} ms)"
    )
    figure = total50 - push50
    if run.broker == PEER:
        print(f"  peer: p50 APPEND→sink minus p50 push {figure:.0f} ms")
        return figure
    verdict = "met" if figure <= TARGET_MS else "missed"
    print(
        f"BAR e2e_{run.broker} {verdict} {figure:.0f} ms "
        f"(target p50 APPEND→sink minus p50 push ≤ {TARGET_MS:.0f} ms; "
        f"p50 {total50:.0f} ms, push {push50:.0f} ms)"
    )
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=40, help="measured, one at a time")
    parser.add_argument("--warmup", type=int, default=3, help="sent first, not measured")
    parser.add_argument("--rows", type=int, default=2000, help="rows of each xlsx list")
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between messages")
    parser.add_argument(
        "--push-samples", type=int, default=20, help="messages timing the server's push"
    )
    parser.add_argument(
        "--brokers",
        default=",".join(BROKERS),
        help=f"comma-separated, of {', '.join(BROKERS)} ({PEER}: the peer)",
    )
    args = parser.parse_args()
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if unknown := set(brokers) - set(BROKERS):
        parser.error(f"unknown broker(s): {', '.join(sorted(unknown))}")

    interrupt_on_termination()
    bench_url = fresh_database(BENCH_DB, "bench/e2e.py")
    try:
        django_on(bench_url)
        workers = os.environ.get("PRICEFEED_Q_WORKERS", 2)
        print(
            f"pipeline: Dovecot → listen_mail → qcluster ({workers}"
            f" workers) → dispatch_outbox → SMTP sink; {args.rows}-row xlsx, one message at a"
            f" time, {args.messages} measured after {args.warmup} warm-up; load "
            f"{os.getloadavg()[0]:.2f}"
        )
        for broker in brokers:
            from django.core.management import call_command

            call_command("flush", interactive=False, verbosity=0)
            report(run_broker(broker, args, bench_url))
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(BENCH_DB)


if __name__ == "__main__":
    main()
