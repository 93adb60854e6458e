"""``listen_mail``: one IDLE listener thread per leased mailbox, under a supervisor.

The supervisor (main thread) keeps the instance heartbeat, takes and renews leases,
reconciles listeners with the mailbox configuration, and sweeps stuck messages. A
listener thread owns its IMAP connection and nothing else: it fetches, records through
``services.messages_record`` (fenced by its lease token) and waits in IDLE.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connection

from pricefeed.faults import crash_point
from pricefeed.pgnotify import NotifyListener
from pricefeed.retry import imap_reconnect_backoff
from pricefeed.services import price_imports_sweep

from . import leases, rebalance, services
from .admission import Admission, unlimited
from .exceptions import LeaseLost, UidValidityChanged
from .imap import ConnectionSettings, ImapSession, batches, describe_error
from .models import Mailbox

logger = logging.getLogger(__name__)

# Servers without IDLE are polled this often.
POLL_WITHOUT_IDLE = 30.0
# At the in-flight limit: how often to look again, and to keep the connection alive.
ADMISSION_RECHECK = 0.5
KEEPALIVE = 120.0
# Instances not seen for a day disappear from the admin.
HEARTBEAT_FORGET_AFTER = 24 * 3600.0


class Waker:
    """A pipe that interrupts an IDLE wait or a backoff sleep at once."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        # wake() may come from another thread after close(): writing to a closed fd
        # number that the process has since reused would corrupt someone else's file.
        self._lock = threading.Lock()
        self._closed = False

    def wake(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                os.write(self.write_fd, b"!")
            except (BlockingIOError, OSError):
                pass

    def drain(self) -> None:
        try:
            while os.read(self.read_fd, 512):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fd in (self.read_fd, self.write_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass


class DatabaseSlots:
    """Bounds how many listener threads use the database at once. With more listeners
    than slots each closes its connection when done, so a hundred idle mailboxes hold no
    server connections and a hundred catching up at once hold at most ``size``; with
    fewer, connections stay open (a reconnect costs milliseconds of latency)."""

    def __init__(self, size: int, listeners: Callable[[], int] = lambda: 1) -> None:
        self.size = max(1, size)
        self._semaphore = threading.BoundedSemaphore(self.size)
        self._listeners = listeners

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._semaphore:
            try:
                yield
            finally:
                if self._listeners() > self.size:
                    connection.close()


def connection_settings(mailbox: Mailbox) -> ConnectionSettings:
    return ConnectionSettings(
        host=mailbox.host,
        port=mailbox.port,
        security=mailbox.security,
        username=mailbox.username,
        password=mailbox.password,
        folder=mailbox.folder,
        connect_timeout=settings.PRICEFEED_IMAP_CONNECT_TIMEOUT,
        timeout=settings.PRICEFEED_IMAP_TIMEOUT,
    )


class MailboxListener(threading.Thread):
    """Listens to one mailbox while its lease is valid and it is not stopped.

    ``valid_until`` (this process's monotonic clock) is pushed forward by the supervisor
    after every successful renewal. When it passes, the listener stops on its own, even
    if the supervisor is stuck: it can no longer prove that the lease is still its own,
    and it must be gone before the lease can expire for anyone else.
    """

    def __init__(
        self,
        *,
        mailbox: Mailbox,
        lease: leases.Lease,
        valid_until: float = float("inf"),
        admission: Admission | None = None,
        db: DatabaseSlots | None = None,
    ) -> None:
        super().__init__(name=f"mailbox-{mailbox.pk}", daemon=True)
        self.mailbox_id = mailbox.pk
        self.mailbox_name = mailbox.name
        self.backfill = mailbox.backfill
        self.fingerprint = mailbox.connection_fingerprint()
        self.conn = connection_settings(mailbox)
        self.lease = lease
        self.valid_until = valid_until
        self.admission = admission or unlimited()
        self.db = db or DatabaseSlots(1)
        self.stopping = threading.Event()
        self.release_on_exit = True
        self.lost_lease = False
        self.waker = Waker()
        self.recorded = 0
        self.since = time.time()
        self.since_monotonic = time.monotonic()

    def stop(self, *, release: bool = True) -> None:
        self.release_on_exit = release
        self.stopping.set()
        self.waker.wake()

    def lease_valid(self) -> bool:
        return time.monotonic() < self.valid_until

    def _check_lease(self) -> None:
        if not self.lease_valid():
            raise LeaseLost(f"lease on mailbox {self.mailbox_id} not renewed in time")

    def _sleep(self, seconds: float) -> None:
        """Waits, but returns at once when stopped."""
        self.stopping.wait(seconds)

    def run(self) -> None:
        backoff = imap_reconnect_backoff()
        failures = 0
        last_error = ""
        try:
            while not self.stopping.is_set():
                self._check_lease()
                session = ImapSession(self.conn)
                try:
                    state = session.open()
                    if failures:
                        logger.info(
                            "mailbox=%s reconnected after %s failure(s)",
                            self.mailbox_name,
                            failures,
                        )
                    failures, last_error = 0, ""
                    with self.db():
                        services.mailbox_report_connected(mailbox_id=self.mailbox_id)
                    self._listen(session, state.uidvalidity, state.uidnext)
                except UidValidityChanged as exc:
                    # Not a failure: reconnect at once, the new SELECT resets the checkpoint.
                    logger.warning("mailbox=%s %s: reselecting", self.mailbox_name, exc)
                except LeaseLost:
                    raise
                except Exception as exc:
                    if self.stopping.is_set():
                        return
                    # A database error may have left this thread's connection unusable.
                    close_old_connections()
                    failures += 1
                    error = describe_error(exc, self.conn)
                    delay = backoff.delay(failures)
                    # One clear line per distinct problem; repeats are quieter.
                    level = logging.ERROR if error != last_error else logging.INFO
                    logger.log(
                        level,
                        "mailbox=%s %s; retry %s in %.1fs",
                        self.mailbox_name,
                        error,
                        failures,
                        delay,
                        extra={"action": "imap_error", "mailbox_id": self.mailbox_id},
                    )
                    if error != last_error:
                        logger.debug("details", exc_info=exc)
                    last_error = error
                    try:
                        with self.db():
                            services.mailbox_report_error(mailbox_id=self.mailbox_id, error=error)
                    except Exception as exc:
                        logger.warning(
                            "cannot record the error of mailbox=%s: %s",
                            self.mailbox_name,
                            first_line(exc),
                        )
                    self._sleep(delay)
                finally:
                    session.close()
        except LeaseLost as exc:
            logger.warning(
                "mailbox=%s stops listening: %s",
                self.mailbox_name,
                exc,
                extra={"action": "lease_lost", "mailbox_id": self.mailbox_id},
            )
            self.lost_lease = True
        finally:
            self.waker.close()
            connection.close()

    def _listen(self, session: ImapSession, uidvalidity: int, uidnext: int | None) -> None:
        start_uid = 0
        if self.backfill == Mailbox.Backfill.NEW and uidnext:
            start_uid = uidnext - 1
        with self.db():
            last_uid = services.checkpoint_sync(
                lease=self.lease,
                folder=self.conn.folder,
                uidvalidity=uidvalidity,
                start_uid=start_uid,
            )
        has_idle = b"IDLE" in session.client.capabilities()
        refresh = settings.PRICEFEED_IMAP_IDLE_REFRESH
        selected_at = time.monotonic()
        while not self.stopping.is_set():
            last_uid = self._catch_up(session, uidvalidity, last_uid)
            if self.stopping.is_set():
                return
            self._check_lease()
            if has_idle:
                # Re-issued well before the server's 29-minute limit (RFC 2177).
                session.idle_wait(refresh, self.waker.read_fd, keep_going=self.lease_valid)
                self.waker.drain()
            else:
                self._sleep(POLL_WITHOUT_IDLE)
                session.noop()
            self._check_lease()
            if time.monotonic() - selected_at >= refresh:
                # An idling client is not told of a UIDVALIDITY change; a SELECT is.
                selected_at = time.monotonic()
                state = session.select(self.conn.folder)
                if state.uidvalidity != uidvalidity:
                    raise UidValidityChanged(
                        f"UIDVALIDITY changed from {uidvalidity} to {state.uidvalidity}"
                    )

    def _catch_up(self, session: ImapSession, uidvalidity: int, last_uid: int) -> int:
        """Records every message above ``last_uid`` until a search finds nothing new.

        Searching again after each round matters: some servers (pymap) never report in
        IDLE what arrived before IDLE began, and a server that announced a message in
        the response to our FETCH (Dovecot) does not announce it again in IDLE. Mail that
        lands while we fetch must be found by the next SEARCH, not by waiting for a push
        that never comes.
        """
        while not self.stopping.is_set():
            found = self._catch_up_once(session, uidvalidity, last_uid)
            if found == last_uid and not session.new_mail_announced():
                return last_uid
            last_uid = found
        return last_uid

    def _catch_up_once(self, session: ImapSession, uidvalidity: int, last_uid: int) -> int:
        """Records messages above ``last_uid``, in UID order, in bounded batches, as many
        as admission control lets in."""
        uids = session.uids_after(last_uid)
        count = settings.PRICEFEED_IMAP_FETCH_BATCH
        while uids and not self.stopping.is_set():
            granted = self._admit(session, min(len(uids), count * 10))
            if not granted:
                return last_uid
            chunk, uids = uids[:granted], uids[granted:]
            try:
                last_uid = self._record_chunk(session, uidvalidity, chunk, last_uid)
            finally:
                self.admission.settle(self.mailbox_id, granted)
        return last_uid

    def _admit(self, session: ImapSession, wanted: int) -> int:
        """Waits (keeping lease and connection) until some messages may be fetched."""
        with self.db():
            granted = self.admission.grant(self.mailbox_id, wanted)
        if granted:
            return granted
        logger.info(
            "mailbox=%s in-flight limit reached: fetching paused",
            self.mailbox_name,
            extra={"action": "admission_paused", "mailbox_id": self.mailbox_id},
        )
        last_noop = time.monotonic()
        while not self.stopping.is_set():
            self._sleep(ADMISSION_RECHECK)
            self._check_lease()
            with self.db():
                granted = self.admission.grant(self.mailbox_id, wanted)
            if granted:
                logger.info("mailbox=%s fetching resumed", self.mailbox_name)
                return granted
            if time.monotonic() - last_noop > KEEPALIVE:
                session.noop()  # an authenticated session idle too long gets logged out
                last_noop = time.monotonic()
        return 0

    def _record_chunk(
        self, session: ImapSession, uidvalidity: int, chunk: list[int], last_uid: int
    ) -> int:
        limit = settings.PRICEFEED_MAX_MESSAGE_BYTES
        sizes = session.sizes(chunk)
        for batch in batches(
            chunk,
            sizes,
            count=settings.PRICEFEED_IMAP_FETCH_BATCH,
            max_bytes=settings.PRICEFEED_IMAP_FETCH_BATCH_BYTES,
        ):
            if self.stopping.is_set():
                return last_uid
            small = [uid for uid in batch if sizes.get(uid, 0) <= limit]
            large = [uid for uid in batch if sizes.get(uid, 0) > limit]
            bodies = session.bodies(small)
            headers = session.headers(large)
            fetched = [
                services.Fetched(uid=uid, size=sizes.get(uid, 0), raw=bodies[uid])
                for uid in small
                if uid in bodies
            ] + [
                services.Fetched(uid=uid, size=sizes.get(uid, 0), header=headers.get(uid, b""))
                for uid in large
            ]
            # A UID that vanished between SEARCH and FETCH (expunged) is skipped.
            crash_point("after_fetch")
            # No local lease check here on purpose: the write below is fenced by the
            # lease token in the database, which is the check that counts.
            with self.db():
                created = services.messages_record(
                    lease=self.lease,
                    folder=self.conn.folder,
                    uidvalidity=uidvalidity,
                    fetched=fetched,
                )
            self.recorded += len(created)
            if created:
                logger.info(
                    "mailbox=%s recorded %s message(s) uid %s..%s",
                    self.mailbox_name,
                    len(created),
                    batch[0],
                    batch[-1],
                    extra={"action": "messages_recorded", "mailbox_id": self.mailbox_id},
                )
            last_uid = batch[-1]
        return last_uid


def _chunks(items: list[int], size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass
class Supervisor:
    """Runs the listeners of one ``listen_mail`` instance until ``stop`` is set.

    The main thread: heartbeat and lease renewal every ``PRICEFEED_HEARTBEAT_INTERVAL``,
    reconciliation (configuration, failover, rebalancing) every
    ``PRICEFEED_CONFIG_POLL_INTERVAL`` or at once on a NOTIFY, sweeps of stuck work.
    Listener threads are started and stopped from here only; a stopped listener's lease
    is released once its thread has finished, never while it might still write.
    """

    instance_id: str
    stop: threading.Event
    only: set[str] | None = None  # mailbox names, for running a subset
    status_file: str = ""
    listeners: dict[int, MailboxListener] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ttl = settings.PRICEFEED_LEASE_TTL
        self.beat = settings.PRICEFEED_HEARTBEAT_INTERVAL
        self.margin = lease_margin(self.ttl, self.beat)
        self.db = DatabaseSlots(
            settings.PRICEFEED_LISTENER_DB_CONNECTIONS, listeners=lambda: len(self._held)
        )
        self.admission = Admission(
            instance_limit=settings.PRICEFEED_MAX_IN_FLIGHT,
            mailbox_limit=settings.PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX,
            held=lambda: self._held,
        )
        self._held: frozenset[int] = frozenset()
        self._kept: dict[int, float] = {}  # taken by fallback: not shed before (monotonic)
        self._status = ""
        self._status_written = 0.0

    def run(self) -> None:
        poll = settings.PRICEFEED_CONFIG_POLL_INTERVAL
        notify = NotifyListener(leases.CHANNEL)
        leases.heartbeat(instance_id=self.instance_id)
        logger.info("listen_mail started instance=%s", self.instance_id)
        now = time.monotonic()
        # The first reconcile waits one heartbeat, so that instances started together
        # see each other before they share out the mailboxes.
        next_beat, next_reconcile, next_sweep = now + self.beat, now + min(self.beat, poll), now
        woken = False
        failures, last_error = 0, ""
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                try:
                    if now >= next_beat:
                        next_beat = now + self.beat
                        leases.heartbeat(instance_id=self.instance_id)
                        self._renew()
                    if woken or now >= next_reconcile:
                        next_reconcile = now + poll * random.uniform(0.8, 1.2)
                        self._reconcile()
                    if now >= next_sweep:
                        next_sweep = now + settings.PRICEFEED_SWEEP_INTERVAL
                        services.messages_sweep()
                        price_imports_sweep()
                        leases.heartbeats_prune(older_than=HEARTBEAT_FORGET_AFTER)
                    if failures:
                        logger.info("supervisor recovered after %s failed step(s)", failures)
                    failures, last_error = 0, ""
                except Exception as exc:
                    connection.close()
                    failures += 1
                    # Every step is retried at its own pace (heartbeats keep trying to
                    # win the leases back); one ERROR per distinct problem.
                    error = f"{type(exc).__name__}: {first_line(exc)}"
                    if error != last_error:
                        logger.exception("supervisor step failed instance=%s", self.instance_id)
                    else:
                        logger.info("supervisor step failed again (%s): %s", failures, error)
                    last_error = error
                    next_reconcile = max(next_reconcile, now + poll)
                    next_sweep = max(next_sweep, now + poll)
                self._expire()
                self._reap()
                self._write_status()
                wait = min(next_beat, next_reconcile, next_sweep) - time.monotonic()
                woken = notify.wait(max(0.05, min(wait, 1.0)), self.stop)
        finally:
            notify.close()
            self.shutdown()

    # -- leases -------------------------------------------------------------------

    def _renew(self) -> None:
        alive = [lst for lst in self.listeners.values() if lst.is_alive()]
        started = time.monotonic()
        kept = leases.leases_renew(
            leases=[lst.lease for lst in alive], owner=self.instance_id, ttl=self.ttl
        )
        for listener in alive:
            if listener.mailbox_id in kept:
                listener.valid_until = started + self.ttl - self.margin
            elif not listener.stopping.is_set():
                logger.warning(
                    "lease lost mailbox=%s token=%s: stopping its listener",
                    listener.mailbox_name,
                    listener.lease.token,
                    extra={"action": "lease_lost", "mailbox_id": listener.mailbox_id},
                )
                listener.valid_until = 0.0
                listener.stop()

    def _expire(self) -> None:
        """Stops listeners whose lease could not be renewed in time (the listener stops
        itself too; this only makes it prompt)."""
        now = time.monotonic()
        for listener in self.listeners.values():
            if now >= listener.valid_until and not listener.stopping.is_set():
                logger.error(
                    "lease on mailbox=%s not renewed for %.0fs: stopping its listener",
                    listener.mailbox_name,
                    self.ttl - self.margin,
                )
                listener.stop()

    def _reconcile(self) -> None:
        snap = leases.snapshot(me=self.instance_id, ttl=self.ttl)
        wanted = dict(snap.weights)
        mailboxes = {m.pk: m for m in Mailbox.objects.filter(pk__in=list(wanted))}
        if self.only is not None:
            wanted = {pk: w for pk, w in wanted.items() if mailboxes[pk].name in self.only}
        for mailbox_id, listener in list(self.listeners.items()):
            if listener.stopping.is_set():
                continue
            mailbox = mailboxes.get(mailbox_id) if mailbox_id in wanted else None
            if mailbox is None:
                logger.info("mailbox=%s disabled or removed: stopping", listener.mailbox_name)
                listener.stop(release=True)
            elif mailbox.connection_fingerprint() != listener.fingerprint:
                # The thread ends; the next round takes the lease again with a new token
                # and a listener with the new settings.
                logger.info("mailbox=%s settings changed: reconnecting", mailbox.name)
                listener.stop(release=False)
        now = time.monotonic()
        self._kept = {m: until for m, until in self._kept.items() if until > now}
        plan = rebalance.plan(
            snap,
            tolerance=settings.PRICEFEED_REBALANCE_TOLERANCE,
            grace=self._grace(),
            keep=frozenset(self._kept),
        )
        keep_for = 30 * settings.PRICEFEED_CONFIG_POLL_INTERVAL
        self._kept.update(dict.fromkeys(plan.fallback, now + keep_for))
        for mailbox_id in plan.release:
            listener = self.listeners.get(mailbox_id)
            if listener is not None and not listener.stopping.is_set():
                logger.info(
                    "mailbox=%s handed over for balance (held %s, share %.1f)",
                    listener.mailbox_name,
                    snap.held()[self.instance_id],
                    snap.share(),
                    extra={"action": "lease_shed", "mailbox_id": mailbox_id},
                )
                listener.stop(release=True)
        # Ours in the database but not listened to here (a listener ended, or this
        # instance restarted under the same id): take it again with a new token.
        ours = [m for m, owner in snap.owners.items() if owner == self.instance_id]
        for mailbox_id in [*plan.acquire, *ours]:
            if mailbox_id in self.listeners or mailbox_id not in wanted:
                continue
            if mailbox_id in plan.release:
                continue
            started = time.monotonic()
            lease = leases.lease_acquire(
                mailbox_id=mailbox_id, owner=self.instance_id, ttl=self.ttl
            )
            if lease is not None:
                self._start(mailboxes[mailbox_id], lease, started + self.ttl - self.margin)

    def _grace(self) -> float:
        """How long a free mailbox waits for its designated taker before anyone takes it."""
        return 3 * settings.PRICEFEED_CONFIG_POLL_INTERVAL + self.beat

    # -- listeners ----------------------------------------------------------------

    def _start(self, mailbox: Mailbox, lease: leases.Lease, valid_until: float) -> None:
        listener = MailboxListener(
            mailbox=mailbox,
            lease=lease,
            valid_until=valid_until,
            admission=self.admission,
            db=self.db,
        )
        self.listeners[mailbox.pk] = listener
        self._held = frozenset(self.listeners)
        # Reported before the thread can touch the mailbox.
        self._write_status(force=True)
        listener.start()
        logger.info(
            "listening mailbox=%s token=%s",
            mailbox.name,
            lease.token,
            extra={"action": "listener_started", "mailbox_id": mailbox.pk},
        )

    def _reap(self) -> None:
        for mailbox_id, listener in list(self.listeners.items()):
            if listener.is_alive():
                continue
            self.listeners.pop(mailbox_id)
            self._held = frozenset(self.listeners)
            if not listener.stopping.is_set() and not listener.lost_lease:
                logger.error(
                    "listener for mailbox=%s died; it will be restarted", listener.mailbox_name
                )
            # Reported gone before the lease is free for anyone else.
            self._write_status(force=True)
            if listener.release_on_exit or listener.lost_lease:
                # Conditional on our owner and token: a no-op if someone took it over.
                try:
                    leases.lease_release(lease=listener.lease)
                except Exception as exc:
                    logger.warning(
                        "cannot release the lease of mailbox=%s (%s); it expires by itself",
                        listener.mailbox_name,
                        first_line(exc),
                    )

    def shutdown(self) -> None:
        """Stops intake, lets in-flight batches finish within the grace period (renewing
        meanwhile), releases each lease as its listener ends, exits."""
        logger.info("listen_mail stopping instance=%s", self.instance_id)
        try:
            leases.heartbeat(instance_id=self.instance_id, stopping=True)
        except Exception as exc:
            logger.warning("cannot mark the heartbeat stopping: %s", first_line(exc))
        for listener in self.listeners.values():
            listener.stop(release=True)
        deadline = time.monotonic() + settings.PRICEFEED_SHUTDOWN_GRACE
        next_beat = time.monotonic() + self.beat
        while self.listeners and time.monotonic() < deadline:
            try:
                if time.monotonic() >= next_beat:
                    next_beat = time.monotonic() + self.beat
                    self._renew()
                self._reap()
            except Exception as exc:
                logger.warning("shutdown step failed: %s", first_line(exc))
                connection.close()
                time.sleep(0.5)
            time.sleep(0.02)
        if self.listeners:
            # Their leases expire by themselves; what they write meanwhile is fenced.
            logger.warning(
                "listeners still busy after the grace period: %s",
                ", ".join(lst.mailbox_name for lst in self.listeners.values()),
            )
        self._write_status(force=True, stopping=True)
        logger.info("listen_mail stopped instance=%s", self.instance_id)

    # -- status report ------------------------------------------------------------

    def _write_status(self, *, force: bool = False, stopping: bool = False) -> None:
        """Writes what this instance believes it listens to, for operators and probes:
        each mailbox with its token and until when (wall clock) the belief holds."""
        if not self.status_file:
            return
        now_wall, now_mono = time.time(), time.monotonic()
        listeners = [
            {
                "mailbox_id": lst.mailbox_id,
                "mailbox": lst.mailbox_name,
                "token": lst.lease.token,
                "since": round(lst.since, 3),
                "valid_until": round(now_wall + min(lst.valid_until - now_mono, 1e6), 3),
                # The same, relative to the moment of writing: clock-independent for a
                # reader that takes the moment from the file's modification time.
                "active_for": round(now_mono - lst.since_monotonic, 3),
                "valid_for": round(min(lst.valid_until - now_mono, 1e6), 3),
                "stopping": lst.stopping.is_set(),
            }
            for lst in self.listeners.values()
            if lst.is_alive() or not lst.ident
        ]
        body = json.dumps(
            {
                "instance": self.instance_id,
                "pid": os.getpid(),
                "stopping": stopping or self.stop.is_set(),
                "listeners": sorted(listeners, key=lambda x: x["mailbox_id"]),
            },
            sort_keys=True,
        )
        if not force and body == self._status and now_mono - self._status_written < self.beat:
            return
        tmp = f"{self.status_file}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, self.status_file)
        self._status, self._status_written = body, now_mono


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def lease_margin(ttl: float, beat: float) -> float:
    """How long before a lease's expiry its listener stops when renewals fail."""
    return max(2 * beat, ttl / 4)
