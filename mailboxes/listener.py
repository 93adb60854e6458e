"""One IDLE listener thread per leased mailbox.

A listener thread owns its IMAP connection and nothing else: it fetches, records
through ``recording.messages_record`` (fenced by its lease token) and waits in IDLE. It
stops on its own when its lease has not been renewed in time, even if the supervisor
(supervisor.py) that renews it is stuck.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection

from core.faults import crash_point
from core.logs import ContextLogger, first_line
from core.retry import imap_reconnect_backoff

from . import leases, recording, services
from .admission import Admission, unlimited
from .exceptions import LeaseLost, UidValidityChanged
from .imap import ImapSession, batches, describe_error
from .models import Mailbox
from .services import connection_settings
from .sync import DatabaseSlots, Waker

logger = logging.getLogger(__name__)

# Servers without IDLE are polled this often.
POLL_WITHOUT_IDLE = 30.0
# At the in-flight limit: how often to look again, and to keep the connection alive.
ADMISSION_RECHECK = 0.5
KEEPALIVE = 120.0


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
        self.log = ContextLogger(logger, {"mailbox_id": mailbox.pk, "mailbox_name": mailbox.name})
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
                        self.log.info(
                            "reconnected after %s failure(s)",
                            failures,
                        )
                    failures, last_error = 0, ""
                    with self.db():
                        services.mailbox_report_connected(mailbox_id=self.mailbox_id)
                    self._listen(session, state.uidvalidity, state.uidnext)
                except UidValidityChanged as exc:
                    # Not a failure: reconnect at once, the new SELECT resets the checkpoint.
                    self.log.warning("%s: reselecting", exc)
                except LeaseLost:
                    raise
                except Exception as exc:
                    # A database error may have left this thread's connection unusable.
                    close_old_connections()
                    if not self.lease_valid():
                        # The lease lapsed while this step was under way: typically a
                        # process frozen (SIGSTOP, a paused VM) inside a write whose
                        # database session the server ended meanwhile (see
                        # leases.listener_session_setup), so the write failed instead of
                        # reaching the fence. Not retried (the new owner records what was
                        # fetched here) and never silent: it ends as a lost lease.
                        raise LeaseLost(
                            f"lease on mailbox {self.mailbox_id} not renewed in time; the "
                            f"step under way failed: {describe_error(exc, self.conn)}"
                        ) from exc
                    if self.stopping.is_set():
                        # Asked to stop (handed over, reconfigured, shutting down) while a
                        # step was under way: end, but say what was cut short.
                        self.log.warning(
                            "stops listening; the step under way failed: %s",
                            describe_error(exc, self.conn),
                            extra={"action": "listener_stopped"},
                        )
                        return
                    failures += 1
                    error = describe_error(exc, self.conn)
                    delay = backoff.delay(failures)
                    # One clear line per distinct problem; repeats are quieter.
                    level = logging.ERROR if error != last_error else logging.INFO
                    self.log.log(
                        level,
                        "%s; retry %s in %.1fs",
                        error,
                        failures,
                        delay,
                        extra={"action": "imap_error"},
                    )
                    if error != last_error:
                        self.log.debug("details", exc_info=exc)
                    last_error = error
                    try:
                        with self.db():
                            services.mailbox_report_error(mailbox_id=self.mailbox_id, error=error)
                    except Exception as exc:
                        self.log.warning(
                            "cannot record the mailbox's error: %s",
                            first_line(exc),
                        )
                    self._sleep(delay)
                finally:
                    session.close()
        except LeaseLost as exc:
            self.log.warning(
                "stops listening: %s",
                exc,
                extra={"action": "lease_lost"},
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
            last_uid = recording.checkpoint_sync(
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
        self.log.info(
            "in-flight limit reached: fetching paused",
            extra={"action": "admission_paused"},
        )
        last_noop = time.monotonic()
        while not self.stopping.is_set():
            self._sleep(ADMISSION_RECHECK)
            self._check_lease()
            with self.db():
                granted = self.admission.grant(self.mailbox_id, wanted)
            if granted:
                self.log.info("fetching resumed")
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
            bodies = session.bodies(small, sizes, limit=limit)
            headers = session.headers(large)
            fetched = [
                recording.Fetched(uid=uid, size=sizes.get(uid, 0), raw=bodies[uid])
                for uid in small
                if uid in bodies
            ] + [
                recording.Fetched(uid=uid, size=sizes.get(uid, 0), header=headers.get(uid, b""))
                for uid in large
            ]
            # A UID that vanished between SEARCH and FETCH (expunged) is skipped.
            crash_point("after_fetch")
            # No local lease check here on purpose: the write below is fenced by the
            # lease token in the database, which is the check that counts.
            with self.db():
                created = recording.messages_record(
                    lease=self.lease,
                    folder=self.conn.folder,
                    uidvalidity=uidvalidity,
                    fetched=fetched,
                )
            self.recorded += len(created)
            if created:
                self.log.info(
                    "recorded %s message(s) uid %s..%s",
                    len(created),
                    batch[0],
                    batch[-1],
                    extra={"action": "messages_recorded"},
                )
            last_uid = batch[-1]
        return last_uid
