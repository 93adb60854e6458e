"""``listen_mail``'s supervisor: leases, heartbeats, rebalancing and sweeps.

The main thread of a ``listen_mail`` instance keeps the instance heartbeat, takes and
renews leases, reconciles listener threads (listener.py) with the mailbox configuration
and the other instances (rebalance.py), and runs the registered sweeps (core.sweeps).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from core import sweeps
from core.logs import ContextLogger, first_line
from core.pgnotify import NotifyListener

from . import leases, rebalance
from .admission import Admission
from .listener import MailboxListener
from .models import Mailbox
from .status import StatusFile
from .sync import DatabaseSlots

logger = logging.getLogger(__name__)

# Instances not seen for a day disappear from the admin.
HEARTBEAT_FORGET_AFTER = 24 * 3600.0

# A database that cannot be reached, or that ended the session: retried like any failed
# step, but logged without a traceback, which would only say where the query was.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)


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
        self.log = ContextLogger(logger, {"instance_id": self.instance_id})
        self.ttl = settings.PRICEFEED_LEASE_TTL
        self.live_within = settings.PRICEFEED_LIVENESS_WINDOW
        self.beat = settings.PRICEFEED_HEARTBEAT_INTERVAL
        self.margin = lease_margin(self.ttl, self.beat)
        self.db = DatabaseSlots(
            settings.PRICEFEED_LISTENER_DB_CONNECTIONS, listeners=lambda: len(self._held)
        )
        self.admission = Admission(
            instance_limit=settings.PRICEFEED_MAX_IN_FLIGHT,
            mailbox_limit=settings.PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX,
            size_limit=settings.PRICEFEED_MAX_IN_FLIGHT_BYTES,
            held=lambda: self._held,
        )
        self._held: frozenset[int] = frozenset()
        self._kept: dict[int, float] = {}  # taken by fallback: not shed before (monotonic)
        self._status = StatusFile(self.status_file, instance_id=self.instance_id, period=self.beat)

    def run(self) -> None:
        poll = settings.PRICEFEED_CONFIG_POLL_INTERVAL
        notify = NotifyListener(leases.CHANNEL)
        leases.instance_started(instance_id=self.instance_id)
        self.log.info("listen_mail started", extra={"action": "instance_started"})
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
                        sweeps.run_all()
                        leases.heartbeats_prune(older_than=HEARTBEAT_FORGET_AFTER)
                    if failures:
                        self.log.info("supervisor recovered after %s failed step(s)", failures)
                    failures, last_error = 0, ""
                except Exception as exc:
                    connection.close()
                    failures += 1
                    # Every step is retried at its own pace (heartbeats keep trying to
                    # win the leases back); one ERROR per distinct problem.
                    error = f"{type(exc).__name__}: {first_line(exc)}"
                    if error != last_error and isinstance(exc, DATABASE_UNAVAILABLE):
                        # A server problem, not a fault here: the database restarted,
                        # the network failed, or the server ended this session (a
                        # process frozen inside a transaction, see
                        # leases.listener_session_setup). One line; details at DEBUG.
                        self.log.error(
                            "supervisor step failed, the database is unavailable: %s",
                            error,
                            extra={"action": "database_unavailable"},
                        )
                        self.log.debug("details", exc_info=exc)
                    elif error != last_error:
                        self.log.exception("supervisor step failed")
                    else:
                        self.log.info("supervisor step failed again (%s): %s", failures, error)
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
                listener.log.warning(
                    "lease lost token=%s: stopping its listener",
                    listener.lease.token,
                    extra={"action": "lease_lost"},
                )
                listener.valid_until = 0.0
                listener.stop()

    def _expire(self) -> None:
        """Stops listeners whose lease could not be renewed in time (the listener stops
        itself too; this only makes it prompt)."""
        now = time.monotonic()
        for listener in self.listeners.values():
            if now >= listener.valid_until and not listener.stopping.is_set():
                listener.log.error(
                    "lease not renewed for %.0fs: stopping its listener",
                    self.ttl - self.margin,
                    extra={"action": "lease_expiring"},
                )
                listener.stop()

    def _reconcile(self) -> None:
        snap = leases.snapshot(me=self.instance_id, live_within=self.live_within)
        wanted = dict(snap.weights)
        mailboxes = {m.pk: m for m in Mailbox.objects.filter(pk__in=list(wanted))}
        if self.only is not None:
            wanted = {pk: w for pk, w in wanted.items() if mailboxes[pk].name in self.only}
        for mailbox_id, listener in list(self.listeners.items()):
            if listener.stopping.is_set():
                continue
            mailbox = mailboxes.get(mailbox_id) if mailbox_id in wanted else None
            if mailbox is None:
                listener.log.info("mailbox disabled or removed: stopping")
                listener.stop(release=True)
            elif mailbox.connection_fingerprint() != listener.fingerprint:
                # The thread ends; the next round takes the lease again with a new token
                # and a listener with the new settings.
                listener.log.info("mailbox settings changed: reconnecting")
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
            shed = self.listeners.get(mailbox_id)
            if shed is not None and not shed.stopping.is_set():
                shed.log.info(
                    "handed over for balance (held %s, share %.1f)",
                    snap.held()[self.instance_id],
                    snap.share(),
                    extra={"action": "lease_shed"},
                )
                shed.stop(release=True)
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
        listener.log.info("listening token=%s", lease.token, extra={"action": "listener_started"})

    def _reap(self) -> None:
        for mailbox_id, listener in list(self.listeners.items()):
            if listener.is_alive():
                continue
            self.listeners.pop(mailbox_id)
            self._held = frozenset(self.listeners)
            if not listener.stopping.is_set() and not listener.lost_lease:
                listener.log.error(
                    "listener died; it will be restarted", extra={"action": "listener_died"}
                )
            # Reported gone before the lease is free for anyone else.
            self._write_status(force=True)
            if listener.release_on_exit or listener.lost_lease:
                # Conditional on our owner and token: a no-op if someone took it over.
                try:
                    leases.lease_release(lease=listener.lease)
                except Exception as exc:
                    listener.log.warning(
                        "cannot release the lease (%s); it expires by itself", first_line(exc)
                    )

    def shutdown(self) -> None:
        """Stops intake, lets in-flight batches finish within the grace period (renewing
        meanwhile), releases each lease as its listener ends, exits."""
        self.log.info("listen_mail stopping", extra={"action": "instance_stopping"})
        try:
            leases.heartbeat(instance_id=self.instance_id, stopping=True)
        except Exception as exc:
            self.log.warning("cannot mark the heartbeat stopping: %s", first_line(exc))
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
                self.log.warning("shutdown step failed: %s", first_line(exc))
                connection.close()
                time.sleep(0.5)
            time.sleep(0.02)
        if self.listeners:
            # Their leases expire by themselves; what they write meanwhile is fenced.
            self.log.warning(
                "listeners still busy after the grace period: %s",
                ", ".join(lst.mailbox_name for lst in self.listeners.values()),
            )
        self._status.write(self.listeners.values(), stopping=True, force=True)
        self.log.info("listen_mail stopped", extra={"action": "instance_stopped"})

    def _write_status(self, *, force: bool = False) -> None:
        self._status.write(self.listeners.values(), stopping=self.stop.is_set(), force=force)


def lease_margin(ttl: float, beat: float) -> float:
    """How long before a lease's expiry its listener stops when renewals fail."""
    return max(2 * beat, ttl / 4)
