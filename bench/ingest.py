#!/usr/bin/env python
"""Ingestion benchmark against a private Dovecot: latency and burst throughput.

    .venv/bin/python bench/ingest.py [--latency 200] [--gap 0.3] [--burst 1000]
                                     [--connections 4] [--quick]

Uses DATABASE_URL (PostgreSQL) or the local server on 127.0.0.1:5432; works in a
database of its own, ``<DATABASE_URL's database>_bench_ingest`` (dropped and created,
and dropped again at the end, also on an error or Ctrl-C). Starts Dovecot, a real
``manage.py listen_mail`` and a real ``manage.py qcluster`` with the project's default
settings: admission control at its defaults (PRICEFEED_MAX_IN_FLIGHT,
PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX; whatever the caller's environment says of them is
ignored) and django-q2 workers that process
every recorded message and run its import (a 50-row CSV). "Recorded" means the
InboundMessage is committed (visible to another connection); the time when the imports
of the same messages finished is printed beside it.

* latency: APPEND returning → InboundMessage committed, one message at a time and
  ``--gap`` seconds after the last one was recorded, so every message is its own IDLE
  wake-up. Dovecot itself waits 500 ms before it tells an idling client
  (NOTIFY_DELAY_MSECS), which is the floor.
* burst, live: N messages appended from ``--connections`` connections in parallel (so
  that the appending client is not what is measured; its append rate is printed); time
  from the first APPEND until all N are committed.
* burst, backlog: N messages put in a folder the listener does not watch, then copied
  into INBOX by one ``UID COPY``, so that they arrive at once while the listener idles;
  time from the COPY returning until all N are committed (Dovecot's push delay
  included). This is the listener's recording rate of a burst, and the burst target's
  figure. Up to admission's bounds the listener records unhindered; beyond them only
  as fast as workers finish messages, which both bursts print apart.
* not a target: the same backlog once more, with a ``listen_mail`` restarted with a
  per-mailbox bound of a fifth of the backlog: what a backlog past the bound records
  at (the workers' pace, beyond the part the bound lets in at once).

Prints one ``BAR <name> met|missed <figure> (target …)`` line per target. A process it
started that exits during the run ends the run at once, naming it, its exit code and
the end of its log. ``--quick``: 50 latency messages and a burst of 300 (about two minutes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
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

BENCH_DB = bench_database("ingest")
USER, PASSWORD = "pricefeed", "secret"
STAGING = "Staging"

TARGET_P50_S = 0.7
TARGET_P99_S = 2.0
TARGET_BURST_RATE = 200.0
BURST_TIMEOUT = 300.0
# One message of the latency run, from its APPEND to its record.
LATENCY_TIMEOUT = 60.0
# What the bench measures is the listener at the defaults: the caller's environment
# must not lift them.
ADMISSION_VARIABLES = (
    "PRICEFEED_MAX_IN_FLIGHT",
    "PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX",
    "PRICEFEED_MAX_IN_FLIGHT_BYTES",
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def bar(name: str, met: bool, figure: str, target: str, quick: bool) -> None:
    print(bar_line(name, met, figure, target, quick), flush=True)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def dovecot_version() -> str:
    from devkit.servers.dovecot import _binary

    binary = _binary("dovecot") or "dovecot"
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


@dataclass
class Burst:
    """What one burst's watcher saw, in seconds from its start (None: never)."""

    n: int
    admitted: int  # what admission lets in before any of the burst is finished
    first_recorded: float | None = None
    admitted_recorded: float | None = None
    all_recorded: float | None = None
    recorded: int = 0
    all_finished: float | None = None
    finished: int = 0
    done: bool | None = None  # set when the watcher returns


def admitted(n: int) -> int:
    from django.conf import settings

    return min(n, settings.PRICEFEED_MAX_IN_FLIGHT, settings.PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX)


def watch(
    prefix: str,
    n: int,
    start: float,
    burst: Burst,
    alive: Callable[[], None],
    wait_imports: bool = True,
) -> None:
    """Polls until ``n`` InboundMessages whose Message-ID starts with ``prefix`` are
    committed, then (``wait_imports``) until all their imports finished; times relative
    to ``start``. ``alive`` raises when a process of the rig has exited."""
    from django.db import connection

    try:
        _watch(prefix, n, start, burst, alive, wait_imports)
    finally:
        burst.done = True
        if threading.current_thread() is not threading.main_thread():
            connection.close()


def _watch(
    prefix: str, n: int, start: float, burst: Burst, alive: Callable[[], None], wait_imports: bool
) -> None:
    from django.db import close_old_connections

    from mailboxes.models import InboundMessage
    from pricefeed.models import PriceImport

    messages = InboundMessage.objects.filter(message_id__startswith=prefix)
    imports = PriceImport.objects.filter(
        message__message_id__startswith=prefix, finished_at__isnull=False
    )
    deadline = time.perf_counter() + BURST_TIMEOUT
    while time.perf_counter() < deadline:
        alive()
        close_old_connections()
        burst.recorded = messages.count()
        now = time.perf_counter() - start
        if burst.recorded and burst.first_recorded is None:
            burst.first_recorded = now
        if burst.recorded >= burst.admitted and burst.admitted_recorded is None:
            burst.admitted_recorded = now
        if burst.recorded >= n:
            burst.all_recorded = now
            break
        time.sleep(0.02)  # polls cost the 2-core machine too: 20 ms is fine here
    while wait_imports and burst.all_recorded is not None and time.perf_counter() < deadline:
        alive()
        close_old_connections()
        burst.finished = imports.count()
        if burst.finished >= n:
            burst.all_finished = time.perf_counter() - start
            break
        time.sleep(0.05)


class Rig:
    """Dovecot, the bench mailbox and its config, listen_mail and qcluster."""

    def __init__(self, bench_url: str, work: Path) -> None:
        from devkit.servers.dovecot import DovecotServer

        self.bench_url = bench_url
        self.work = work
        self.dovecot = DovecotServer()
        self.processes: list = []

    def start(self) -> None:
        from devkit.samples import price_list_csv, price_rows
        from devkit.servers.processes import ManagedProcess, wait_until
        from mailboxes.models import Mailbox
        from pricefeed.models import PriceListConfig

        self.dovecot.start()
        self.mailbox = Mailbox.objects.create(
            name="bench",
            host=self.dovecot.host,
            port=self.dovecot.port,
            security="plain",
            username=USER,
            password=PASSWORD,
        )
        PriceListConfig.objects.create(
            mailbox=self.mailbox,
            name="bench",
            sender_pattern="*@acme.test",
            filename_pattern="*.csv",
        )
        env = {**os.environ, "DATABASE_URL": self.bench_url, "LOG_LEVEL": "WARNING"}
        for command in ("listen_mail", "qcluster"):
            self.processes.append(ManagedProcess(command, [command], env, self.work).start())
        wait_until(lambda: self.mailbox.checkpoints.exists(), 60, "listener connected")
        self.attachment = price_list_csv(price_rows(50))

    def email(self, subject: str, message_id: str) -> bytes:
        from devkit.samples import supplier_email

        return supplier_email(
            subject=subject, message_id=message_id, attachments=[("price.csv", self.attachment)]
        )

    def appender(self):
        from devkit.servers import ImapAppender

        return ImapAppender(self.dovecot.host, self.dovecot.port, USER, PASSWORD).open()

    def settle(self, prefix: str, n: int, timeout: float = BURST_TIMEOUT) -> None:
        """Waits until the ``n`` messages of ``prefix`` and their imports are finished,
        so that the next phase starts with nothing in flight."""
        from devkit.servers.processes import wait_until
        from pricefeed.models import PriceImport

        def finished() -> bool:
            self.check_alive()
            return (
                PriceImport.objects.filter(
                    message__message_id__startswith=prefix, finished_at__isnull=False
                ).count()
                >= n
            )

        wait_until(
            finished,
            timeout,
            f"imports of {prefix} finished",
            on_timeout=self.logs,
        )

    def check_alive(self) -> None:
        """Raises at once, with the process's exit code and the end of its log, when
        ``listen_mail`` or ``qcluster`` has exited: waiting for a dead process would
        only end in a timeout that names the wrong cause, or never end."""
        for process in self.processes:
            if not process.alive:
                raise RuntimeError(
                    f"{process.name} exited (code {process.process.returncode}) during the "
                    f"bench; the end of its log:\n{process.log()[-3000:]}"
                )

    def logs(self) -> str:
        from django.db.models import Count

        from mailboxes.models import InboundMessage
        from pricefeed.models import PriceImport

        states = [
            f"--- {model.__name__} by status: "
            + str(dict(model.objects.values_list("status").annotate(n=Count("pk"))))
            for model in (InboundMessage, PriceImport)
        ]
        return "\n".join([*states, *(f"--- {p.name}\n{p.log()[-3000:]}" for p in self.processes)])

    def restart_listener(self, extra_env: dict[str, str]) -> None:
        """A new ``listen_mail`` in place of the running one, with ``extra_env``; returns
        once it is connected."""
        from devkit.servers.processes import wait_until
        from mailboxes.models import Mailbox

        def connected_at():
            return Mailbox.objects.values_list("last_connected_at", flat=True).get(
                pk=self.mailbox.pk
            )

        before = connected_at()
        listener = self.processes[0]
        listener.stop(grace=30)
        listener.start(extra_env)
        wait_until(lambda: connected_at() != before, 60, "listener reconnected")

    def stop(self) -> None:
        for process in self.processes:
            process.stop(grace=30)
        self.dovecot.cleanup()


def measure_latency(rig: Rig, n: int, gap: float) -> list[float]:
    from django.db import close_old_connections

    from mailboxes.models import InboundMessage
    from pricefeed.models import PriceImport

    latencies: list[float] = []
    appended_at: dict[str, float] = {}
    with rig.appender() as appender:
        time.sleep(1.0)  # the listener is back in IDLE
        for i in range(n):
            # The listener is idling again when the next message comes: one appended
            # while it is still busy with the last is seen by its next SEARCH, at once,
            # and would measure that race instead of the wake-up.
            time.sleep(gap)
            message_id = f"<lat-{i}@acme.test>"
            appender.append(rig.email(f"latency {i}", message_id))
            appended = time.perf_counter()
            appended_at[message_id] = time.time()
            while True:
                close_old_connections()
                if InboundMessage.objects.filter(message_id=message_id).exists():
                    break
                rig.check_alive()
                if time.perf_counter() - appended > LATENCY_TIMEOUT:
                    raise RuntimeError(
                        f"{message_id} not recorded within {LATENCY_TIMEOUT:.0f} s\n{rig.logs()}"
                    )
                time.sleep(0.005)
            latencies.append(time.perf_counter() - appended)
    print(
        f"latency over {n} messages, one at a time, {gap:g} s apart (APPEND returned → committed):"
    )
    print(
        f"  p50 {percentile(latencies, 50) * 1000:.0f} ms, "
        f"p95 {percentile(latencies, 95) * 1000:.0f} ms, "
        f"p99 {percentile(latencies, 99) * 1000:.0f} ms; "
        f"min {min(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms, "
        f"mean {statistics.mean(latencies) * 1000:.0f} ms"
    )
    rig.settle("<lat-", n)
    finished = [
        finished_at.timestamp() - appended_at[message_id]
        for message_id, finished_at in PriceImport.objects.filter(
            message__message_id__startswith="<lat-"
        ).values_list("message__message_id", "finished_at")
    ]
    print(
        f"  APPEND returned → its import finished: p50 {percentile(finished, 50) * 1000:.0f} ms, "
        f"p99 {percentile(finished, 99) * 1000:.0f} ms"
    )
    return latencies


def append_parallel(
    rig: Rig,
    messages: list[bytes],
    connections: int,
    folder: str,
    started: Callable[[float], None] = lambda _start: None,
) -> float:
    """Appends ``messages`` from ``connections`` connections, each its share in order;
    returns the seconds from the first APPEND until the last one returned. ``started``
    is told the moment (perf_counter) they all begin."""
    appenders = [rig.appender() for _ in range(connections)]
    ready = threading.Barrier(connections + 1)
    errors: list[BaseException] = []

    def run(appender, share: list[bytes]) -> None:
        ready.wait()
        try:
            for raw in share:
                appender.append(raw, folder)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(appenders[k], messages[k::connections]), daemon=True)
        for k in range(connections)
    ]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    started(start)
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    for appender in appenders:
        appender.close()
    if errors:
        raise errors[0]
    return elapsed


def report_burst(title: str, burst: Burst) -> float:
    """Prints one burst's figures; returns its msg/s until all recorded (0: not all)."""
    n = burst.n
    print(title)
    if burst.all_recorded is None:
        print(f"  NOT all recorded within {BURST_TIMEOUT:.0f} s: {burst.recorded} of {n}")
        return 0.0
    rate = n / burst.all_recorded
    print(f"  all {n} recorded after {burst.all_recorded:.2f} s: {rate:.0f} msg/s")
    if burst.first_recorded is not None and burst.all_recorded > burst.first_recorded:
        span = burst.all_recorded - burst.first_recorded
        print(
            f"  first committed after {burst.first_recorded:.2f} s; from then to the last: "
            f"{span:.2f} s ({n / span:.0f} msg/s)"
        )
    if burst.admitted < n and burst.admitted_recorded is not None:
        # Up to the per-mailbox bound the listener records unhindered; the rest only as
        # workers finish messages (admission control).
        print(
            f"  the first {burst.admitted} (admission's per-mailbox bound) recorded after "
            f"{burst.admitted_recorded:.2f} s ({burst.admitted / burst.admitted_recorded:.0f}"
            f" msg/s); the other {n - burst.admitted} as workers finished messages: "
            f"{(n - burst.admitted) / (burst.all_recorded - burst.admitted_recorded):.0f}"
            " msg/s"
        )
    if burst.all_finished is None and burst.finished:
        print(f"  imports: {burst.finished} of {n} finished within {BURST_TIMEOUT:.0f} s")
    elif burst.all_finished is not None:
        print(
            f"  all their imports finished after {burst.all_finished:.2f} s: "
            f"{n / burst.all_finished:.0f} msg/s"
        )
    return rate


def measure_live_burst(rig: Rig, n: int, connections: int) -> float:
    prefix = "<live-"
    messages = [rig.email(f"live {i}", f"{prefix}{i}@acme.test>") for i in range(n)]
    burst = Burst(n, admitted(n))

    def started(start: float) -> None:
        # The watcher's clock starts when the appenders all begin.
        threading.Thread(
            target=watch, args=(prefix, n, start, burst, rig.check_alive), daemon=True
        ).start()

    appended = append_parallel(rig, messages, connections, "INBOX", started)
    while burst.done is None:
        rig.check_alive()
        time.sleep(0.05)
    rig.check_alive()  # the watcher also stops when a process exits
    rate = report_burst(
        f"burst, live: {n} messages ({len(messages[0])} bytes each) appended from "
        f"{connections} connections in {appended:.2f} s ({n / appended:.0f} msg/s); "
        "times from the first APPEND:",
        burst,
    )
    rig.settle(prefix, n)
    return rate


def measure_backlog_burst(
    rig: Rig,
    n: int,
    connections: int,
    name: str = "backlog",
    title: str = "",
    bound: int | None = None,
) -> tuple[float, Burst]:
    """Times a backlog of ``n`` arriving at once; ``title`` and ``bound`` (the
    per-mailbox bound the listener was restarted with) make it the run past the bound."""
    from imapclient import IMAPClient

    prefix = f"<{name}-"
    messages = [rig.email(f"{name} {i}", f"{prefix}{i}@acme.test>") for i in range(n)]
    staging = f"{STAGING}-{name}"  # a folder per burst: it holds only this one
    rig.dovecot.create_folder(USER, staging)
    append_parallel(rig, messages, connections, staging)
    client = IMAPClient(rig.dovecot.host, rig.dovecot.port, ssl=False, timeout=30)
    client.login(USER, PASSWORD)
    client.select_folder(staging)
    uids = client.search("ALL")
    time.sleep(1.0)  # the listener is back in IDLE
    burst = Burst(n, admitted(n) if bound is None else min(n, bound))
    client.copy(uids, "INBOX")
    start = time.perf_counter()
    client.logout()
    watch(prefix, n, start, burst, rig.check_alive)
    rate = report_burst(
        title
        or f"burst, backlog: {n} messages copied into INBOX by one UID COPY while the "
        "listener idles; times from the COPY returning (Dovecot's 0.5 s push included):",
        burst,
    )
    rig.settle(prefix, n)
    return rate, burst


def run(args: argparse.Namespace, bench_url: str, work: Path) -> None:
    from django.conf import settings

    workers = settings.Q_CLUSTER["workers"]
    broker = settings.Q_CLUSTER.get("broker_class", "django-q2 ORM (polls)")
    print(
        f"conditions: {dovecot_version()}; admission PRICEFEED_MAX_IN_FLIGHT="
        f"{settings.PRICEFEED_MAX_IN_FLIGHT}, PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX="
        f"{settings.PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX}, PRICEFEED_MAX_IN_FLIGHT_BYTES="
        f"{settings.PRICEFEED_MAX_IN_FLIGHT_BYTES}; qcluster with {workers} workers "
        f"({broker}); fetch batch {settings.PRICEFEED_IMAP_FETCH_BATCH}; "
        f"{args.connections} append connections; {os.cpu_count()} CPUs; load {load()}"
        + ("; quick" if args.quick else ""),
        flush=True,
    )
    rig = Rig(bench_url, work)
    try:
        rig.start()
        # Warm-up: the first message pays for imports and connections in every process.
        with rig.appender() as appender:
            for i in range(3):
                appender.append(rig.email(f"warm-up {i}", f"<warm-{i}@acme.test>"))
        rig.settle("<warm-", 3, timeout=60)

        latencies = measure_latency(rig, args.latency, args.gap)
        print(f"  load {load()}", flush=True)
        measure_live_burst(rig, args.burst, args.connections)
        print(f"  load {load()}", flush=True)
        rate, burst = measure_backlog_burst(rig, args.burst, args.connections)
        print(f"  load {load()}", flush=True)
        # Not a target: the same backlog past a per-mailbox bound, what a backlog larger
        # than the bounds records at.
        bound = max(1, args.burst // 5)
        rig.restart_listener({"PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX": str(bound)})
        measure_backlog_burst(
            rig,
            args.burst,
            args.connections,
            name="bounded",
            bound=bound,
            title=f"not a target: the same backlog of {args.burst} past a per-mailbox bound "
            f"of {bound} (PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX={bound}), workers running; "
            "times from the COPY returning:",
        )
        print(f"  load {load()}", flush=True)
    finally:
        rig.stop()

    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    n = len(latencies)
    bar(
        "ingest_latency_p50",
        p50 <= TARGET_P50_S,
        f"{p50:.2f} s",
        f"<= {TARGET_P50_S:g} s over {n} messages",
        args.quick,
    )
    bar(
        "ingest_latency_p99",
        p99 <= TARGET_P99_S,
        f"{p99:.2f} s",
        f"<= {TARGET_P99_S:g} s over {n} messages",
        args.quick,
    )
    bar(
        "ingest_burst_rate",
        burst.all_recorded is not None and rate >= TARGET_BURST_RATE,
        f"{rate:.0f} msg/s",
        f">= {TARGET_BURST_RATE:.0f} msg/s, a backlog of {args.burst} all recorded",
        args.quick,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=int, default=200, help="messages, one at a time")
    parser.add_argument("--burst", type=int, default=1000, help="messages in each burst")
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between latency messages")
    parser.add_argument("--connections", type=int, default=4, help="append connections")
    parser.add_argument("--quick", action="store_true", help="50 latency messages, burst 300")
    args = parser.parse_args()
    if args.quick:
        args.latency, args.burst = 50, 300

    for name in ADMISSION_VARIABLES:
        os.environ.pop(name, None)
    interrupt_on_termination()
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    bench_url = fresh_database(BENCH_DB, "bench/ingest.py")
    failed = True
    try:
        django_on(bench_url)
        run(args, bench_url, work)
        failed = False
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # Django never set up: nothing to close
            pass
        drop_database(BENCH_DB)
        if failed:
            print(f"logs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
