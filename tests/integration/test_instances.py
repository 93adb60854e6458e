"""Several ``listen_mail`` processes on one Dovecot: failover, fencing, rebalancing,
clock skew. Real processes, killed, frozen, resumed and restarted."""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from devkit.servers import ImapAppender
from devkit.servers.dovecot import DovecotServer
from devkit.servers.listeners import ListenerProcess, OverlapSampler
from mailboxes.models import InboundMessage, Mailbox, MailboxCheckpoint
from tests.factories import create_config, create_mailbox, price_mail
from tests.requirements import require_dovecot

from .conftest import REQUIRE_DOVECOT
from .support import FAST_ENV, TcpProxy, WriteAudit, database_url, mailbox_line, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# Uneven weights (total 31): a fair share for three instances is 10.3.
WEIGHTS = [5, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1]
TTL = float(FAST_ENV["PRICEFEED_LEASE_TTL"])
FAULT_VARIABLES = ("PRICEFEED_CRASH", "PRICEFEED_PAUSE")


@pytest.fixture
def cluster(transactional_db, tmp_path):
    """A Dovecot with twelve users and a mailbox each; starts listeners on request."""
    require_dovecot()
    users = {f"mb{n:02d}": "secret" for n in range(len(WEIGHTS))}
    server = DovecotServer(users)
    server.start()
    mailboxes = [
        _mailbox(server, user, weight=weight) for user, weight in zip(users, WEIGHTS, strict=True)
    ]
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PRICEFEED_CRASH", "PRICEFEED_PAUSE"))
        },
        **FAST_ENV,
        "DATABASE_URL": database_url(),
        "PYTHONUNBUFFERED": "1",
        # No workers run here: recorded messages stay RECEIVED, so lift the bound.
        "PRICEFEED_MAX_IN_FLIGHT": "100000",
        "PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX": "100000",
    }
    started: list[ListenerProcess] = []
    appenders: list[Appender] = []

    class Cluster:
        def __init__(self) -> None:
            self.server = server
            self.mailboxes = mailboxes
            self.weights = {m.pk: m.weight for m in mailboxes}

        def listener(self, instance_id: str, prefix=(), **extra_env: str) -> ListenerProcess:
            # Its database sessions carry its name (pg_stat_activity, WriteAudit).
            own = {**env, "DATABASE_URL": f"{env['DATABASE_URL']}?application_name={instance_id}"}
            process = ListenerProcess(instance_id, tmp_path, own, prefix=prefix).start(extra_env)
            started.append(process)
            return process

        def appender(self) -> Appender:
            """Delivers into every mailbox until finished (at the latest at teardown)."""
            appender = Appender(server, [m.name for m in mailboxes])
            appenders.append(appender)
            appender.start()
            return appender

        def held(self) -> dict[str, int]:
            """Weight held per owner of an unexpired lease."""
            held: Counter[str] = Counter()
            for mailbox_id, owner, _token in lease_rows(unexpired=True):
                held[owner] += self.weights[mailbox_id]
            return dict(held)

        def tokens(self) -> dict[int, int]:
            return {m: t for m, _o, t in lease_rows()}

        def logs(self) -> str:
            return "\n".join(f"--- {p.instance_id}\n{p.log()[-3000:]}" for p in started)

    yield Cluster()
    for appender in appenders:  # before the server goes: a failed test leaves it running
        appender.finish()
    for process in started:
        process.stop(grace=5)
    server.cleanup()


def _mailbox(server: DovecotServer, user: str, **fields) -> Mailbox:
    """A mailbox for a Dovecot user whose password is "secret", with an enabled config
    (a mailbox is listened to only with one) that matches none of the mail: these tests
    are about recording, and every message ends IGNORED at once."""
    mailbox = create_mailbox(
        name=user,
        host=server.host,
        port=server.port,
        security=Mailbox.Security.PLAIN,
        username=user,
        password="secret",
        **fields,
    )
    create_config(mailbox, name=user, sender_pattern="*@matches-nothing.invalid")
    return mailbox


def lease_rows(unexpired: bool = False) -> list[tuple[int, str, int]]:
    """(mailbox, owner, token) read on a connection of its own, as another process would."""
    sql = "SELECT mailbox_id, owner, token FROM mailboxes_mailboxlease"
    if unexpired:
        sql += " WHERE owner <> '' AND expires_at > now()"
    with psycopg.connect(database_url().replace("postgres://", "postgresql://")) as conn:
        return conn.execute(sql).fetchall()


class Appender(threading.Thread):
    """Delivers numbered messages round-robin into every mailbox until stopped."""

    def __init__(self, server: DovecotServer, users: list[str], pause: float = 0.05) -> None:
        super().__init__(daemon=True, name="appender")
        self.server, self.users, self.pause = server, users, pause
        self.delivered: list[tuple[str, str]] = []
        self.done = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            user = self.users[n % len(self.users)]
            message_id = f"<m{n}.{user}@supplier.test>"
            self.server.deliver(user, price_mail(message_id=message_id, subject=f"#{n}"))
            self.delivered.append((user, message_id))
            n += 1
            self.done.wait(self.pause)

    def finish(self) -> list[tuple[str, str]]:
        self.done.set()
        self.join(30)
        return self.delivered


def recorded() -> list[tuple[str, str]]:
    return list(InboundMessage.objects.values_list("mailbox__name", "message_id"))


@pytest.fixture
def write_audit(transactional_db):
    """Who wrote each recorded message and checkpoint, under which lease (see WriteAudit)."""
    audit = WriteAudit().install()
    yield audit
    audit.uninstall()


# Where b freezes: before its write (the fence refuses it when b wakes), or inside it,
# holding the lease row (the server ends the frozen session; the write fails on waking).
@pytest.mark.parametrize("pause_at", ["after_fetch", "record_after_fence"])
def test_kill_freeze_and_restart_keep_one_listener_per_mailbox_and_every_message_once(
    write_audit, cluster, tmp_path, pause_at
):
    a = cluster.listener("a")
    b = cluster.listener(
        "b", PRICEFEED_PAUSE_AT=pause_at, PRICEFEED_PAUSE_ONCE=str(tmp_path / "paused")
    )
    c = cluster.listener("c")
    sampler = OverlapSampler([a, b, c], lease_rows).start()
    everything = {m.pk for m in cluster.mailboxes}
    wait_until(
        lambda: (
            a.listening() | b.listening() | c.listening() == everything
            and all(p.listening() for p in (a, b, c))
        ),
        30,
        "every mailbox listened to, by all three",
        on_timeout=cluster.logs,
    )
    appender = cluster.appender()

    # b freezes itself (SIGSTOP) with a fetched batch, before or while recording it.
    wait_until(b.paused, 30, f"b frozen at {pause_at}", on_timeout=cluster.logs)
    frozen = {(m, t) for m, owner, t in lease_rows() if owner == "b"}  # b's leases, frozen
    writer = int(re.search(r"\[mailbox-(\d+)\] .*pause point reached", b.log()).group(1))
    a.kill()  # and a dies outright
    # c takes everything once the leases of a and b have expired (TTL), not before.
    wait_until(
        lambda: c.listening() == everything, 4 * TTL, "c listens to all", on_timeout=cluster.logs
    )
    assert b.paused()
    woken_at = write_audit.now()
    b.signal(signal.SIGCONT)  # the zombie wakes up with its fetched batch

    # It finds its leases gone and ends every listener it had, none silently, whatever
    # that listener was doing when frozen: idle, or inside the write of its batch (then
    # refused by the fence, or failed because the server ended the frozen session).
    def old_listeners_ended() -> bool:
        held = {(e["mailbox_id"], e["token"]) for e in b.status().get("listeners", [])}
        return not held & frozen

    wait_until(old_listeners_ended, 20, "b's old listeners ended", on_timeout=b.log)
    woken = b.log().split("pause point reached", 1)[1]
    stopped = rf"\[mailbox-{writer}\] stops listening.* mailbox_id={writer}\b"
    assert re.search(stopped, woken), woken
    assert not re.search(rf"\[mailbox-{writer}\] .*; retry \d+ in", woken), woken
    for mailbox_id, _token in frozen:
        reported = rf"(lease lost|lease not renewed|stops listening).* mailbox_id={mailbox_id}\b"
        assert re.search(reported, woken), (mailbox_id, woken)
    # c restarts: a graceful stop hands its mailboxes over at once, then it rejoins.
    assert c.stop() == 0
    c.start()
    wait_until(
        lambda: b.listening() | c.listening() == everything and c.listening(),
        30,
        "b and the new c share the mailboxes",
        on_timeout=cluster.logs,
    )
    time.sleep(2)
    delivered = appender.finish()
    wait_until(
        lambda: len(recorded()) >= len(delivered),
        60,
        f"all {len(delivered)} messages recorded",
        on_timeout=cluster.logs,
    )
    sampler.stop()

    assert Counter(recorded()) == Counter(delivered)  # every message, each once
    # The woken zombie wrote nothing: every message and checkpoint of this test was
    # written by the owner of an unexpired lease, as the writing transaction saw the
    # lease row (the fence holds it) ...
    writes = write_audit.writes()
    assert {w[1] for w in writes} >= {"b", "c"}, writes
    unfenced = [w for w in writes if w[1] != w[5] or not w[7]]
    assert not unfenced, unfenced
    # ... and b, once woken, wrote nothing under a lease it held when it froze.
    stale = [w for w in writes if w[1] == "b" and w[0] >= woken_at and (w[3], w[6]) in frozen]
    assert not stale, stale
    # Checkpoints end at the highest recorded UID of each mailbox.
    for mailbox in cluster.mailboxes:
        last = InboundMessage.objects.filter(mailbox=mailbox).order_by("-uid").first()
        checkpoint = MailboxCheckpoint.objects.get(mailbox=mailbox)
        assert checkpoint.last_uid == last.uid
    # Never two listeners on one mailbox, by the listeners' own reports.
    assert sampler.samples > 100
    assert not sampler.overlaps(), sampler.overlaps()
    assert not sampler.token_regressions
    assert not sampler.unknown_tokens(), sampler.unknown_tokens()
    for process in (b, c):
        assert "Traceback" not in process.log()


def test_scale_up_from_two_to_three_converges_within_30s_then_stops_moving(cluster):
    a = cluster.listener("a")
    b = cluster.listener("b")
    total = sum(WEIGHTS)
    wait_until(
        lambda: (
            sum(cluster.held().values()) == total
            and all(abs(w - total / 2) <= 1 for w in cluster.held().values())
        ),
        30,
        "two instances balanced",
        on_timeout=cluster.logs,
    )

    started = time.monotonic()
    c = cluster.listener("c")
    share = total / 3

    def balanced() -> bool:
        held = cluster.held()
        return (
            set(held) == {"a", "b", "c"}
            and sum(held.values()) == total
            and all(abs(w - share) <= 1 for w in held.values())
        )

    wait_until(balanced, 30, "within one config-weight of the share", on_timeout=cluster.logs)
    converged_after = time.monotonic() - started
    tokens = cluster.tokens()
    time.sleep(4 * float(FAST_ENV["PRICEFEED_CONFIG_POLL_INTERVAL"]) + 2 * TTL)

    moved = {m for m, t in cluster.tokens().items() if t != tokens[m]}
    assert not moved, f"leases still moving after convergence: {moved}"
    assert balanced()
    assert converged_after < 30
    for process in (a, b, c):
        assert "Traceback" not in process.log()


def test_instances_with_clocks_an_hour_off_share_fail_over_and_record_once(cluster):
    if shutil.which("faketime") is None:
        if REQUIRE_DOVECOT:  # CI: the test tools must be there
            pytest.fail("faketime is required but not installed")
        pytest.skip("faketime not installed: apt-get install faketime (./scripts/test does)")
    normal = cluster.listener("normal")
    ahead = cluster.listener("ahead", prefix=["faketime", "-f", "+1h"])
    behind = cluster.listener("behind", prefix=["faketime", "-f", "-1h"])
    sampler = OverlapSampler([normal, ahead, behind], lease_rows).start()
    total = sum(WEIGHTS)
    wait_until(
        lambda: (
            set(cluster.held()) == {"normal", "ahead", "behind"}
            and sum(cluster.held().values()) == total
            and all(abs(w - total / 3) <= 1 for w in cluster.held().values())
        ),
        40,
        "three skewed instances balanced",
        on_timeout=cluster.logs,
    )
    tokens = cluster.tokens()
    time.sleep(3 * TTL)  # renewals keep working: a skewed clock must not expire anything
    assert cluster.tokens() == tokens
    for mailbox in cluster.mailboxes:
        cluster.server.deliver(mailbox.name, price_mail(message_id=f"<one.{mailbox.name}@x>"))
    wait_until(lambda: len(recorded()) == len(WEIGHTS), 30, "one message each")

    ahead.kill()
    everything = {m.pk for m in cluster.mailboxes}
    wait_until(
        lambda: normal.listening() | behind.listening() == everything,
        4 * TTL,
        "the dead instance's mailboxes taken over",
        on_timeout=cluster.logs,
    )
    for mailbox in cluster.mailboxes:
        cluster.server.deliver(mailbox.name, price_mail(message_id=f"<two.{mailbox.name}@x>"))
    wait_until(lambda: len(recorded()) == 2 * len(WEIGHTS), 30, "two messages each")
    sampler.stop()

    assert len(set(recorded())) == 2 * len(WEIGHTS)
    assert not sampler.overlaps(), sampler.overlaps()
    behind_log = behind.log()
    assert "Traceback" not in behind_log and "not renewed" not in behind_log
    assert "lease lost" not in normal.log() + behind_log


def test_burst_of_2000_under_an_in_flight_limit_of_100(transactional_db, manage):
    """2,000 messages land at once in two mailboxes; one instance with a limit of 100 in
    flight records them all, each once, never holding more than 100 unfinished."""
    require_dovecot()
    users = {"north": "secret", "south": "secret"}
    server = DovecotServer(users)
    server.start()
    try:
        for user in users:
            _mailbox(server, user)
        listener = manage(
            "listen_mail",
            env={"PRICEFEED_MAX_IN_FLIGHT": "100", "PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX": "80"},
        )
        listener.wait_for_log(mailbox_line("south", "listening token="))
        listener.wait_for_log(mailbox_line("north", "listening token="))

        peak = InFlightPeaks(listener.pid)
        body = b"x" * 2000
        for user in users:
            with ImapAppender(server.host, server.port, user, "secret") as appender:
                for n in range(1000):
                    appender.append(
                        price_mail(
                            (("price.xlsx", body),),
                            message_id=f"<burst{n}.{user}@x>",
                            subject=f"burst {n}",
                        )
                    )
        # At the bound the listener waits, its connection and lease kept ...
        listener.wait_for_log("in-flight limit reached: fetching paused", 30)
        assert InboundMessage.objects.count() < 2000
        # ... and goes on as the workers drain the backlog.
        manage("qcluster")
        wait_until(
            lambda: (
                InboundMessage.objects.count() == 2000
                and not InboundMessage.objects.filter(
                    status__in=["RECEIVED", "PROCESSING"]
                ).exists()
            ),
            180,
            "2,000 messages recorded and processed",
            on_timeout=listener.log,
        )
        peak.stop()

        ids = list(InboundMessage.objects.values_list("message_id", flat=True))
        assert len(ids) == len(set(ids)) == 2000
        assert Counter(InboundMessage.objects.values_list("status", flat=True)) == {"IGNORED": 2000}
        assert 0 < peak.messages <= 100
        assert peak.rss_kb < 200 * 1024, f"listener RSS peaked at {peak.rss_kb} kB"
        assert listener.count("fetching resumed") >= 1
        assert "Traceback" not in listener.log()
    finally:
        server.cleanup()


class InFlightPeaks(threading.Thread):
    """Samples every 20 ms, from its start until ``stop``, the most messages in flight
    (RECEIVED, PROCESSING), their largest size in all, and the largest RSS of ``pid``."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.messages = self.size = self.rss_kb = 0
        self._done = threading.Event()
        self.start()

    def run(self) -> None:
        dsn = database_url().replace("postgres://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not self._done.is_set():
                n, size = conn.execute(
                    "SELECT count(*), coalesce(sum(size), 0) FROM mailboxes_inboundmessage"
                    " WHERE status IN ('RECEIVED', 'PROCESSING')"
                ).fetchone()
                self.messages = max(self.messages, n)
                self.size = max(self.size, size)
                self.rss_kb = max(self.rss_kb, _rss_kb(self.pid))
                self._done.wait(0.02)

    def stop(self) -> None:
        self._done.set()
        self.join(5)


def _rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_an_instance_cut_off_from_the_database_stops_before_its_leases_expire(cluster):
    s = connection.settings_dict
    proxy = TcpProxy((s["HOST"] or "127.0.0.1", int(s["PORT"] or 5432)))
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    try:
        cut = cluster.listener(
            "cut", DATABASE_URL=f"postgres://{auth}@127.0.0.1:{proxy.port}/{s['NAME']}"
        )
        other = cluster.listener("other")
        everything = {m.pk for m in cluster.mailboxes}
        wait_until(
            lambda: (
                cut.listening() | other.listening() == everything
                and cut.listening()
                and other.listening()
            ),
            30,
            "both listening",
            on_timeout=cluster.logs,
        )
        sampler = OverlapSampler([cut, other], lease_rows).start()
        stranded = cut.listening()

        proxy.cut()  # the network between "cut" and the database goes down

        wait_until(
            lambda: other.listening() == everything,
            4 * TTL,
            "the other instance took everything over",
            on_timeout=cluster.logs,
        )
        # Each of its listeners stopped on its own, its lease not renewed in time.
        stops = [line for line in cut.log().splitlines() if "not renewed" in line]
        for mailbox_id in stranded:
            assert any(f" mailbox_id={mailbox_id} " in line for line in stops), stops

        proxy.restore()
        wait_until(lambda: cut.listening(), 30, "cut rejoins", on_timeout=cluster.logs)
        sampler.stop()
        assert not sampler.overlaps(), sampler.overlaps()
        assert sampler.samples > 50
    finally:
        proxy.close()


def test_the_size_of_what_waits_in_flight_is_bounded(transactional_db, manage):
    """Messages of ~60 kB each under an in-flight size bound of 200 kB: the listener
    takes in what fits, waits with its lease and connection kept, and goes on as the
    workers finish; the size in flight never passes the bound."""
    require_dovecot()
    server = DovecotServer({"north": "secret"})
    server.start()
    try:
        _mailbox(server, "north")
        listener = manage("listen_mail", env={"PRICEFEED_MAX_IN_FLIGHT_BYTES": "200000"})
        listener.wait_for_log(mailbox_line("north", "listening token="))
        peak = InFlightPeaks(listener.pid)
        body = bytes(range(256)) * 180  # ~46 kB, ~62 kB as base64 in the message
        with ImapAppender(server.host, server.port, "north", "secret") as appender:
            for n in range(30):
                appender.append(
                    price_mail(
                        (("price.xlsx", body),), message_id=f"<big{n}@x>", subject=f"big {n}"
                    )
                )
        listener.wait_for_log("in-flight limit reached: fetching paused", 30)
        waiting = list(InboundMessage.objects.values_list("size", flat=True))
        assert 0 < len(waiting) < 30
        assert sum(waiting) <= 200_000
        manage("qcluster")
        wait_until(
            lambda: (
                InboundMessage.objects.count() == 30
                and not InboundMessage.objects.filter(
                    status__in=["RECEIVED", "PROCESSING"]
                ).exists()
            ),
            120,
            "30 messages recorded and processed",
            on_timeout=listener.log,
        )
        peak.stop()
        assert 0 < peak.size <= 200_000
        assert listener.count("fetching resumed") >= 1
        assert "Traceback" not in listener.log()
    finally:
        server.cleanup()
