#!/usr/bin/env python
"""Failover benchmark: real ``listen_mail`` processes on a private Dovecot, default settings.

    .venv/bin/python bench/failover.py [--rounds 3] [--mailboxes 100]

Uses DATABASE_URL (PostgreSQL) or the local server on 127.0.0.1:5432, in its own
database ``<DATABASE_URL's database>_bench_failover`` (dropped and created, and dropped
again at the end, also on an error, Ctrl-C or SIGTERM). Prints:

* SIGKILL of a mailbox's owner -> another instance has taken the lease and connected
  to that mailbox (its ``last_connected_at`` moved past the kill, on database time);
* SIGTERM of the owner -> the same, the handover;
* RSS of one instance listening to ``--mailboxes`` mailboxes, and the database
  connections it holds while they idle;
* scale-up 2 -> 3 instances over twelve mailboxes of uneven weight: seconds until each
  holds within one config-weight of its fair share, and lease moves in the 30 s after.

Times are wall-clock on a shared machine: compare runs, not single figures.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.benchdb import (  # noqa: E402
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
)

BENCH_DB = bench_database("failover")
WEIGHTS = [5, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1]


def _rss_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="kills and handovers each")
    parser.add_argument("--mailboxes", type=int, default=100, help="for the RSS figure")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["failover", "scale-up", "memory"],
        default=["failover", "scale-up", "memory"],
        help="sections to run",
    )
    args = parser.parse_args()
    interrupt_on_termination()
    bench_url = fresh_database(BENCH_DB, "bench/failover.py")
    try:
        run(bench_url, args)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(BENCH_DB)


def run(bench_url: str, args: argparse.Namespace) -> None:
    django_on(bench_url)
    from django.conf import settings
    from django.db import connection
    from django.db.models import Q
    from django.db.models.functions import Now

    from devkit.servers.dovecot import DovecotServer
    from devkit.servers.listeners import ListenerProcess
    from devkit.servers.processes import wait_until
    from mailboxes.models import Mailbox, MailboxLease
    from pricefeed.models import PriceListConfig

    count = max(args.mailboxes, len(WEIGHTS))
    users = {f"box{n:03d}": "secret" for n in range(count)}
    dovecot = DovecotServer(users)
    dovecot.start()
    workdir = Path(tempfile.mkdtemp(prefix="pricefeed-failover-"))
    faults = ("PRICEFEED_CRASH", "PRICEFEED_PAUSE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(faults)}
    env |= {"DATABASE_URL": bench_url, "LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
    processes: list[ListenerProcess] = []

    def listener(instance_id: str) -> ListenerProcess:
        process = ListenerProcess(instance_id, workdir, env).start()
        processes.append(process)
        return process

    def logs() -> str:
        return "\n".join(f"--- {p.instance_id}\n{p.log()[-2000:]}" for p in processes)

    def wait(predicate, timeout: float, what: str, interval: float = 0.01):
        return wait_until(predicate, timeout, what, interval=interval, on_timeout=logs)

    def held() -> dict[str, int]:
        weights = {m.pk: m.weight for m in Mailbox.objects.filter(enabled=True)}
        out: Counter[str] = Counter()
        for mailbox_id, owner in (
            MailboxLease.objects.filter(mailbox__enabled=True, expires_at__gt=Now())
            .exclude(owner="")
            .values_list("mailbox_id", "owner")
        ):
            out[owner] += weights[mailbox_id]
        return dict(out)

    def balanced(instances: list[str]) -> bool:
        h, total = held(), sum(WEIGHTS)
        return (
            set(h) == set(instances)
            and sum(h.values()) == total
            and all(abs(w - total / len(instances)) <= 1 for w in h.values())
        )

    def db_now():
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            return cursor.fetchone()[0]

    try:
        mailboxes = [
            Mailbox.objects.create(
                name=user,
                host=dovecot.host,
                port=dovecot.port,
                security="plain",
                username=user,
                password="secret",
                weight=WEIGHTS[n] if n < len(WEIGHTS) else 1,
                enabled=n < len(WEIGHTS),
            )
            for n, user in enumerate(users)
        ]
        # A mailbox is listened to only with an enabled config; this one matches no mail.
        PriceListConfig.objects.bulk_create(
            PriceListConfig(mailbox=m, name=m.name, sender_pattern="*@matches-nothing.invalid")
            for m in mailboxes
        )
        few = mailboxes[: len(WEIGHTS)]
        print(
            f"defaults: lease TTL {settings.PRICEFEED_LEASE_TTL:g} s, heartbeat "
            f"{settings.PRICEFEED_HEARTBEAT_INTERVAL:g} s, poll "
            f"{settings.PRICEFEED_CONFIG_POLL_INTERVAL:g} s; {len(few)} mailboxes, weights "
            f"{WEIGHTS}"
        )

        if "failover" in args.only:
            # -- failover and handover -----------------------------------------------------------
            a, b = listener("a"), listener("b")
            results: dict[str, list[float]] = {"SIGKILL": [], "SIGTERM": []}
            for how in ("SIGKILL", "SIGTERM"):
                for _ in range(args.rounds):
                    wait(lambda: balanced(["a", "b"]), 60, "a and b balanced", interval=0.2)
                    time.sleep(2)  # everyone connected and idling
                    target = few[0]
                    owner_id = MailboxLease.objects.get(mailbox=target).owner
                    owner = a if owner_id == "a" else b
                    other = b if owner is a else a
                    before = db_now()
                    started = time.monotonic()
                    if how == "SIGKILL":
                        owner.kill()
                    else:
                        owner.signal(signal.SIGTERM)
                    wait(
                        lambda target=target, other=other, before=before: (
                            MailboxLease.objects.filter(
                                mailbox=target, owner=other.instance_id
                            ).exists()
                            and Mailbox.objects.filter(
                                pk=target.pk, last_connected_at__gt=before
                            ).exists()
                        ),
                        60,
                        f"{target.name} listened again after {how}",
                    )
                    results[how].append(time.monotonic() - started)
                    if how == "SIGTERM":
                        owner.process.wait(30)
                    owner.start()  # back for the next round
            for how, label, target_s in (
                ("SIGKILL", "SIGKILL of the owner -> listened again", 15),
                ("SIGTERM", "SIGTERM of the owner -> handed over    ", 2),
            ):
                values = results[how]
                print(
                    f"{label}: "
                    + ", ".join(f"{v:.2f}" for v in values)
                    + f" s (median {statistics.median(values):.2f}, max {max(values):.2f};"
                    f" target <= {target_s} s)"
                )

        if "scale-up" in args.only:
            if not processes:
                listener("a"), listener("b")
            # -- scale-up ------------------------------------------------------------------------
            wait(lambda: balanced(["a", "b"]), 60, "a and b balanced", interval=0.2)
            time.sleep(3)
            started = time.monotonic()
            listener("c")
            wait(lambda: balanced(["a", "b", "c"]), 120, "a, b and c balanced", interval=0.05)
            converged = time.monotonic() - started
            tokens = dict(MailboxLease.objects.values_list("mailbox_id", "token"))
            time.sleep(30)
            after = dict(MailboxLease.objects.values_list("mailbox_id", "token"))
            moved = sum(after[m] - tokens.get(m, 0) for m in after)
            print(
                f"scale-up 2 -> 3: within one config-weight of the share after {converged:.1f} s;"
                f" lease moves in the next 30 s: {moved}; shares {held()}"
            )

        if "memory" in args.only:
            # -- memory with many mailboxes ------------------------------------------------------
            for process in processes:
                process.stop()
            Mailbox.objects.update(enabled=True)
            since = db_now()
            solo = listener("solo")
            everything = {m.pk for m in mailboxes}
            wait(lambda: solo.listening() == everything, 120, f"{count} mailboxes listened", 0.2)
            wait(
                lambda: (
                    not Mailbox.objects.filter(
                        Q(last_connected_at=None) | Q(last_connected_at__lt=since)
                    ).exists()
                ),
                120,
                "all connected",
                0.2,
            )
            time.sleep(5)
            rss, peak = _rss_mb(solo.pid)
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    [BENCH_DB],
                )
                (db_connections,) = cursor.fetchone()
            print(
                f"one instance listening to {count} mailboxes: RSS {rss:.0f} MB"
                f" (peak {peak:.0f} MB; target <= 150 MB),"
                f" database connections while idle: {db_connections}"
            )
    finally:
        for process in processes:
            process.stop()
        dovecot.cleanup()


if __name__ == "__main__":
    main()
