"""``listen_mail``: one IDLE listener thread per leased mailbox, under a supervisor.

The supervisor (main thread) keeps the instance heartbeat, takes and renews leases,
reconciles listeners with the mailbox configuration, and sweeps stuck messages. A
listener thread owns its IMAP connection and nothing else: it fetches, records through
``services.messages_record`` (fenced by its lease token) and waits in IDLE.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connection

from pricefeed.faults import crash_point
from pricefeed.retry import imap_reconnect_backoff
from pricefeed.services import price_imports_sweep

from . import leases, services
from .exceptions import LeaseLost, UidValidityChanged
from .imap import ConnectionSettings, ImapSession, batches, describe_error
from .models import Mailbox

logger = logging.getLogger(__name__)

# Servers without IDLE are polled this often.
POLL_WITHOUT_IDLE = 30.0


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
    """Listens to one mailbox for as long as it holds the lease and is not stopped."""

    def __init__(self, *, mailbox: Mailbox, lease: leases.Lease) -> None:
        super().__init__(name=f"mailbox-{mailbox.pk}", daemon=True)
        self.mailbox_id = mailbox.pk
        self.mailbox_name = mailbox.name
        self.backfill = mailbox.backfill
        self.fingerprint = mailbox.connection_fingerprint()
        self.conn = connection_settings(mailbox)
        self.lease = lease
        self.stopping = threading.Event()
        self.lost_lease = False
        self.waker = Waker()
        self.recorded = 0

    def stop(self) -> None:
        self.stopping.set()
        self.waker.wake()

    def _sleep(self, seconds: float) -> None:
        """Waits, but returns at once when stopped."""
        self.stopping.wait(seconds)

    def run(self) -> None:
        backoff = imap_reconnect_backoff()
        failures = 0
        last_error = ""
        try:
            while not self.stopping.is_set():
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
                    services.mailbox_report_connected(mailbox_id=self.mailbox_id)
                    self._listen(session, state.uidvalidity, state.uidnext)
                except UidValidityChanged as exc:
                    # Not a failure: reconnect at once, the new SELECT resets the checkpoint.
                    logger.warning("mailbox=%s %s: reselecting", self.mailbox_name, exc)
                except LeaseLost as exc:
                    logger.warning("mailbox=%s stops listening: %s", self.mailbox_name, exc)
                    self.lost_lease = True
                    return
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
                        services.mailbox_report_error(mailbox_id=self.mailbox_id, error=error)
                    except Exception:
                        logger.exception(
                            "cannot record mailbox error mailbox=%s", self.mailbox_name
                        )
                    self._sleep(delay)
                finally:
                    session.close()
        finally:
            self.waker.close()
            connection.close()

    def _listen(self, session: ImapSession, uidvalidity: int, uidnext: int | None) -> None:
        start_uid = 0
        if self.backfill == Mailbox.Backfill.NEW and uidnext:
            start_uid = uidnext - 1
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
            if has_idle:
                # Re-issued well before the server's 29-minute limit (RFC 2177).
                session.idle_wait(refresh, self.waker.read_fd)
                self.waker.drain()
            else:
                self._sleep(POLL_WITHOUT_IDLE)
                session.noop()
            close_old_connections()
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
        """Records every message above ``last_uid``, in UID order, in bounded batches."""
        uids = session.uids_after(last_uid)
        if not uids:
            return last_uid
        limit = settings.PRICEFEED_MAX_MESSAGE_BYTES
        count = settings.PRICEFEED_IMAP_FETCH_BATCH
        for chunk in _chunks(uids, count * 10):
            sizes = session.sizes(chunk)
            for batch in batches(
                chunk, sizes, count=count, max_bytes=settings.PRICEFEED_IMAP_FETCH_BATCH_BYTES
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
    """Runs the listeners of one ``listen_mail`` instance until ``stop`` is set."""

    instance_id: str
    stop: threading.Event
    only: set[str] | None = None  # mailbox names, for running a subset
    listeners: dict[int, MailboxListener] = field(default_factory=dict)

    def run(self) -> None:
        ttl = settings.PRICEFEED_LEASE_TTL
        beat = settings.PRICEFEED_HEARTBEAT_INTERVAL
        margin = max(beat, ttl / 3)
        last_renewal = time.monotonic()
        next_beat = next_poll = next_sweep = 0.0
        leases.heartbeat(instance_id=self.instance_id)
        logger.info("listen_mail started instance=%s", self.instance_id)
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                try:
                    if now >= next_beat:
                        next_beat = now + beat
                        leases.heartbeat(instance_id=self.instance_id)
                        self._renew(ttl)
                        last_renewal = now
                    if now >= next_poll:
                        next_poll = now + settings.PRICEFEED_CONFIG_POLL_INTERVAL
                        self._reconcile(ttl)
                    if now >= next_sweep:
                        next_sweep = now + settings.PRICEFEED_SWEEP_INTERVAL
                        services.messages_sweep()
                        price_imports_sweep()
                except Exception:
                    logger.exception("supervisor step failed instance=%s", self.instance_id)
                    connection.close()
                    if time.monotonic() - last_renewal > ttl - margin:
                        # We cannot prove we still hold anything: stop before the leases
                        # can expire for someone else.
                        logger.error(
                            "leases not renewed for %.0fs: stopping all listeners",
                            time.monotonic() - last_renewal,
                        )
                        self._stop_all(release=False)
                self._reap()
                self.stop.wait(max(0.05, min(next_beat, next_poll, next_sweep) - time.monotonic()))
        finally:
            self.shutdown()

    def _renew(self, ttl: float) -> None:
        held = [listener.lease for listener in self.listeners.values()]
        kept = leases.leases_renew(leases=held, owner=self.instance_id, ttl=ttl)
        for mailbox_id in [m for m in self.listeners if m not in kept]:
            logger.warning("lease lost mailbox=%s: stopping its listener", mailbox_id)
            self.listeners.pop(mailbox_id).stop()

    def _reconcile(self, ttl: float) -> None:
        wanted = {m.pk: m for m in Mailbox.objects.filter(enabled=True)}
        if self.only is not None:
            wanted = {pk: m for pk, m in wanted.items() if m.name in self.only}
        for mailbox_id in list(self.listeners):
            listener = self.listeners[mailbox_id]
            mailbox = wanted.get(mailbox_id)
            if mailbox is None:
                logger.info("mailbox=%s disabled or removed: stopping", listener.mailbox_name)
                self._stop_one(mailbox_id, release=True)
            elif mailbox.connection_fingerprint() != listener.fingerprint:
                logger.info("mailbox=%s settings changed: reconnecting", mailbox.name)
                self._stop_one(mailbox_id, release=False)
                self._start(mailbox, listener.lease)
        for mailbox_id, mailbox in wanted.items():
            if mailbox_id in self.listeners:
                continue
            lease = leases.lease_acquire(mailbox_id=mailbox_id, owner=self.instance_id, ttl=ttl)
            if lease is not None:
                self._start(mailbox, lease)

    def _start(self, mailbox: Mailbox, lease: leases.Lease) -> None:
        listener = MailboxListener(mailbox=mailbox, lease=lease)
        self.listeners[mailbox.pk] = listener
        listener.start()
        logger.info(
            "listening mailbox=%s token=%s",
            mailbox.name,
            lease.token,
            extra={"action": "listener_started", "mailbox_id": mailbox.pk},
        )

    def _stop_one(self, mailbox_id: int, *, release: bool) -> None:
        listener = self.listeners.pop(mailbox_id)
        listener.stop()
        listener.join(settings.PRICEFEED_SHUTDOWN_GRACE)
        if release:
            leases.lease_release(lease=listener.lease)

    def _stop_all(self, *, release: bool) -> None:
        for listener in self.listeners.values():
            listener.stop()
        deadline = time.monotonic() + settings.PRICEFEED_SHUTDOWN_GRACE
        for listener in self.listeners.values():
            listener.join(max(0.0, deadline - time.monotonic()))
        stuck = [lst.mailbox_name for lst in self.listeners.values() if lst.is_alive()]
        if stuck:
            logger.warning("listeners still busy after the grace period: %s", ", ".join(stuck))
        if release:
            for listener in self.listeners.values():
                if not listener.is_alive():
                    try:
                        leases.lease_release(lease=listener.lease)
                    except Exception:
                        logger.exception("release failed mailbox=%s", listener.mailbox_name)
        self.listeners.clear()

    def _reap(self) -> None:
        for mailbox_id, listener in list(self.listeners.items()):
            if not listener.is_alive():
                self.listeners.pop(mailbox_id)
                if listener.lost_lease:
                    continue
                if not listener.stopping.is_set():
                    logger.error(
                        "listener for mailbox=%s died; it will be restarted", listener.mailbox_name
                    )
                leases.lease_release(lease=listener.lease)

    def shutdown(self) -> None:
        logger.info("listen_mail stopping instance=%s", self.instance_id)
        try:
            leases.heartbeat(instance_id=self.instance_id, stopping=True)
        except Exception:
            logger.exception("cannot mark heartbeat stopping")
        self._stop_all(release=True)
        logger.info("listen_mail stopped instance=%s", self.instance_id)
