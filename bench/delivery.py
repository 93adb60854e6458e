#!/usr/bin/env python
"""Event delivery benchmark: events through pricefeed's outbox to a webhook receiver and to
RabbitMQ, against a raw publisher in the same run.

    .venv/bin/python bench/delivery.py [--quick] [--events N] [--rounds R] [--keep]

Uses DATABASE_URL (PostgreSQL) or the local server on 127.0.0.1:5432; works in its own
database ``<DATABASE_URL's database>_bench_delivery`` (dropped, created, migrated,
dropped again at the end, also after an error, Ctrl-C or SIGTERM, unless --keep), and
RabbitMQ on 127.0.0.1:5672 (guest/guest: an exchange and a durable queue of this run's
own, deleted at the end). ``--quick``: 1,000 events, 2 rounds; full: 5,000, 3 rounds.

For each channel, webhook then AMQP, in alternating rounds:

* pricefeed as production runs it: ``manage.py qcluster`` and ``manage.py
  dispatch_outbox`` (the settings' defaults), started and warmed (200 events delivered)
  first, one endpoint enabled (a webhook at the receiver, or a RabbitMQ target at the
  bench exchange). N ``price.changed`` events published in one transaction; clocked from
  its commit to the last delivery's ``sent_at`` (PostgreSQL's clock). Each event goes
  through the outbox twice: its fan-out (a Delivery and a send event), then its send.
* the raw publisher: N POSTs of a body of the same size over one keep-alive
  ``http.client`` connection, each answer read; or N persistent, ``mandatory``
  ``basic_publish`` calls with publisher confirms on one pika ``BlockingConnection``
  (each waits for its confirm, as pricefeed's do).

The receiver is ``devkit.servers.webhook`` in a process of its own (HTTP/1.1 keep-alive,
a thread per connection); every delivery is counted at the receiver (its ``GET
/count``) and in the queue, to prove it arrived. Medians of the rounds are compared.

Prints figures, and one line per target: ``BAR <name> met|missed <figure> (target …)``
(``(quick)`` after it in a quick pass); nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.benchdb import (
    bar_line,
    bench_database,
    django_on,
    drop_database,
    fresh_database,
    interrupt_on_termination,
    production_key,
)

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = bench_database("delivery")
TARGET_RATIO = 0.5
WARM = 200
KIND = "price.changed"
# A payload of the size price.changed carries for a few changed prices.
PAYLOAD = {
    "version": 1,
    "items": [{"product": 1000 + i, "price": "1299.00", "was": "1250.00"} for i in range(3)],
}

_children: list[subprocess.Popen] = []


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """A manage.py command in a process group of its own (qcluster forks workers)."""
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
    """SIGTERM, then SIGKILL to the process group of this one process the bench started."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(15)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)
    if process in _children:
        _children.remove(process)


class Receiver:
    """devkit.servers.webhook in a process of its own."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "devkit.servers.webhook"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        _children.append(self.process)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith("listening "):
            raise RuntimeError("webhook receiver did not start")
        self.port = int(line.split()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def count(self) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/count")
            return int(conn.getresponse().read())
        finally:
            conn.close()


class Broker:
    """An exchange and a durable queue bound to it, of this run's own."""

    def __init__(self) -> None:
        import pika

        suffix = uuid.uuid4().hex[:10]
        self.exchange = f"pricefeed-bench-{suffix}"
        self.queue = f"pricefeed-bench-{suffix}"
        self.connection = pika.BlockingConnection(
            pika.ConnectionParameters(
                "127.0.0.1", 5672, credentials=pika.PlainCredentials("guest", "guest")
            )
        )
        self.channel = self.connection.channel()
        self.channel.exchange_declare(self.exchange, exchange_type="topic")
        self.channel.queue_declare(self.queue, durable=True)
        self.channel.queue_bind(self.queue, self.exchange, routing_key="#")

    def take(self) -> int:
        """How many messages wait in the queue; the queue emptied."""
        self.connection.process_data_events(0)
        waiting = self.channel.queue_declare(self.queue, durable=True, passive=True)
        self.channel.queue_purge(self.queue)
        return waiting.method.message_count

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.channel.queue_delete(self.queue)
            self.channel.exchange_delete(self.exchange)
            self.connection.close()


def _body() -> bytes:
    from django.utils import timezone

    from delivery.services import envelope

    return envelope(uuid.uuid4(), KIND, timezone.now(), PAYLOAD)


def raw_webhook(receiver: Receiver, n: int) -> float:
    """N POSTs over one keep-alive connection; seconds."""
    body = _body()
    headers = {"Content-Type": "application/json", "Idempotency-Key": "x"}
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    started = time.perf_counter()
    for _ in range(n):
        conn.request("POST", "/hook", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"receiver answered {response.status}")
    took = time.perf_counter() - started
    conn.close()
    return took


def raw_amqp(broker: Broker, n: int) -> float:
    """N persistent, mandatory messages with publisher confirms on one connection."""
    import pika

    body = _body()
    connection = pika.BlockingConnection(
        pika.ConnectionParameters(
            "127.0.0.1", 5672, credentials=pika.PlainCredentials("guest", "guest")
        )
    )
    channel = connection.channel()
    channel.confirm_delivery()
    started = time.perf_counter()
    for i in range(n):
        channel.basic_publish(
            broker.exchange,
            KIND,
            body,
            pika.BasicProperties(
                content_type="application/json",
                delivery_mode=2,
                message_id=str(i),
                type=KIND,
                timestamp=int(time.time()),
            ),
            mandatory=True,
        )
    took = time.perf_counter() - started
    connection.close()
    return took


def _publish(n: int):
    """N price.changed events in one transaction; PostgreSQL's clock as the transaction
    ends (its last statement), and the ids. (Read after the commit, the clock came after
    the commit's hooks, which then held a wake-up per event, while the dispatcher was
    already delivering: the webhook's rounds came out negative.)"""
    from django.db import connection, transaction

    from delivery.models import Webhook
    from outbox.services import publish

    anchor = Webhook.objects.order_by("pk").first()
    with transaction.atomic():
        ids = [publish(KIND, anchor, PAYLOAD).id for _ in range(n)]
        with connection.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            committed = cursor.fetchone()[0]
    return committed, ids


def pricefeed_round(n: int, timeout: float) -> float:
    """Seconds from the commit of N events (its last statement) to the last delivery's
    sent_at."""
    from django.db.models import Count, Max, Q

    from delivery.models import Delivery

    committed, ids = _publish(n)
    deadline = time.monotonic() + timeout
    while True:
        row = Delivery.objects.filter(event_id__in=ids).aggregate(
            sent=Count("pk", filter=Q(status=Delivery.Status.SENT)), last=Max("sent_at")
        )
        if row["sent"] == n:
            return (row["last"] - committed).total_seconds()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{n - row['sent']} deliveries not SENT after {timeout:.0f} s")
        time.sleep(0.05)


def channel_rounds(channel: str, args, env, tmp: Path, receiver: Receiver, broker: Broker):
    """(pricefeed's rates, the raw publisher's rates), events per second, a round each
    in turn."""
    from delivery.models import AmqpTarget, Webhook

    Webhook.objects.update(enabled=channel == "webhook")
    AmqpTarget.objects.update(enabled=channel == "amqp")
    log = tmp / f"{channel}.log"
    cluster = _start(["qcluster"], env, log)
    dispatcher = _start(["dispatch_outbox"], env, log)

    def arrived() -> int:
        """How many requests or messages arrived since the last call."""
        if channel == "amqp":
            return broker.take()
        total = receiver.count()
        new, seen[0] = total - seen[0], total
        return new

    seen = [receiver.count()]
    ours: list[float] = []
    raw: list[float] = []
    try:
        pricefeed_round(WARM, timeout=120)
        arrived()
        for _ in range(args.rounds):
            took = pricefeed_round(args.events, timeout=max(120, args.events / 20))
            ours.append(args.events / took)
            if (got := arrived()) != args.events:
                raise RuntimeError(f"pricefeed {channel}: {got} of {args.events} arrived")
            if channel == "webhook":
                took = raw_webhook(receiver, args.events)
            else:
                took = raw_amqp(broker, args.events)
            raw.append(args.events / took)
            if (got := arrived()) != args.events:
                raise RuntimeError(f"raw {channel}: {got} of {args.events} arrived")
    except Exception:
        print(
            f"--- the last lines of {log.name}:\n" + "".join(log.read_text().splitlines(True)[-30:])
        )
        raise
    finally:
        _stop(dispatcher)
        _stop(cluster)
    return ours, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="1,000 events, 2 rounds")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()
    args.events = args.events or (1_000 if args.quick else 5_000)
    args.rounds = args.rounds or (2 if args.quick else 3)

    production_key()
    interrupt_on_termination()
    url = fresh_database(BENCH_DB, "bench/delivery.py")
    broker = receiver = None
    bars: list[str] = []
    try:
        os.environ["PRICEFEED_DELIVERY_ALLOW_PLAIN"] = "true"
        django_on(url)
        from django.db.models import Count

        from delivery.kinds import EventKind
        from delivery.models import AmqpTarget, Delivery, Webhook

        receiver = Receiver()
        broker = Broker()
        Webhook.objects.create(
            name="bench", url=receiver.url, secret="bench-secret-bench-secret", kinds=[KIND]
        )
        AmqpTarget.objects.create(
            name="bench",
            url="amqp://guest@127.0.0.1:5672/",
            password="guest",
            exchange=broker.exchange,
            kinds=[EventKind.PRICE_CHANGED],
        )
        env = {**os.environ, "DATABASE_URL": url, "PYTHONUNBUFFERED": "1"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        print(
            f"{args.events:,} {KIND} events per round, {args.rounds} rounds per channel, "
            f"pricefeed and the raw publisher in turn"
        )
        with tempfile.TemporaryDirectory(prefix="bench-delivery-") as tmp:
            for channel, name in (("webhook", "webhook"), ("amqp", "amqp")):
                ours, raw = channel_rounds(channel, args, env, Path(tmp), receiver, broker)
                mine, theirs = statistics.median(ours), statistics.median(raw)
                ratio = mine / theirs
                print(
                    f"{channel}: pricefeed {', '.join(f'{r:,.0f}' for r in ours)} events/s "
                    f"(median {mine:,.0f}); raw publisher {', '.join(f'{r:,.0f}' for r in raw)} "
                    f"(median {theirs:,.0f}); {ratio:.2f}x"
                )
                bars.append(
                    bar_line(
                        f"delivery_{name}_vs_raw",
                        ratio >= TARGET_RATIO,
                        f"{ratio:.2f}x ({mine:,.0f} vs {theirs:,.0f} events/s)",
                        f">= {TARGET_RATIO}x the raw publisher",
                        args.quick,
                    )
                )
        states = dict(Delivery.objects.order_by().values_list("status").annotate(n=Count("pk")))
        print(f"deliveries by status: {states}")
        for line in bars:
            print(line)
    finally:
        for process in list(_children):
            _stop(process)
        if broker is not None:
            broker.close()
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(BENCH_DB)


if __name__ == "__main__":
    main()
