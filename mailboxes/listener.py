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
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connection

from core import metrics
from core.faults import crash_point
from core.logs import ContextLogger, first_line
from core.retry import imap_reconnect_backoff
from core.texts import Text

from . import leases, recording, services, texts
from .admission import Admission, Grant, unlimited
from .exceptions import LeaseLost, UidValidityChanged
from .imap import FolderState, ImapSession, batches, describe_error
from .models import Mailbox
from .services import connection_settings
from .sync import DatabaseSlots, Waker

logger = logging.getLogger(__name__)

# Servers without IDLE are polled this often when PRICEFEED_IMAP_CHECK_INTERVAL is 0
# (otherwise every check interval).
POLL_WITHOUT_IDLE = 30.0
# Mail found this many times in a row by a search after an IDLE that announced nothing
# is logged (once per connection): by chance it happens to a server that pushes too,
# when mail lands in the moment before a check.
SILENT_IDLE_HINT = 3
# At the in-flight limit: how often to look again (soon at first, so that a backlog
# the workers are draining is fetched as they finish, then less often while nothing
# finishes), and to keep the connection alive.
ADMISSION_RECHECK_FIRST = 0.05
ADMISSION_RECHECK = 0.5
KEEPALIVE = 120.0


def admission_recheck(previous: float | None) -> float:
    """How long a paused listener waits before it asks admission control again: soon
    after the pause (``previous`` None), then twice as long each time up to
    ADMISSION_RECHECK."""
    if previous is None:
        return ADMISSION_RECHECK_FIRST
    return min(previous * 2, ADMISSION_RECHECK)


def idle_timeout(refresh: float, check: float, since_select: float) -> float:
    """How long the next IDLE may last: until the folder's refresh is due
    (``refresh`` seconds after its SELECT, ``since_select`` ago), and with a check
    interval (``check`` > 0) no longer than that, so that a search of our own runs at
    least every ``check`` seconds whatever the server's IDLE says."""
    if check <= 0:
        return refresh  # IDLE alone, re-issued every refresh as it always was
    return max(0.0, min(check, refresh - since_select))


# A connection that stayed up this long forgives the failures before it: the next
# problem starts the reconnect backoff over. A shorter one does not, so a server that
# accepts the login and then fails every time is retried ever more slowly, not each second.
STABLE_CONNECTION = 60.0


def failures_counted(failures: int, connected_for: float | None) -> int:
    """The reconnect failures the next backoff counts from: ``failures`` so far, or none
    when the last connection (``connected_for`` seconds; None: it never opened) was
    stable."""
    if connected_for is not None and connected_for >= STABLE_CONNECTION:
        return 0
    return failures


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
            raise LeaseLost(Text(texts.LEASE_NOT_RENEWED, mailbox=str(self.mailbox_id)))

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
                opened_at: float | None = None
                try:
                    state = session.open()
                    opened_at = time.monotonic()
                    metrics.IMAP_CONNECTIONS.labels(mailbox=self.mailbox_name).inc()
                    if failures:
                        metrics.IMAP_RECONNECTS.labels(mailbox=self.mailbox_name).inc()
                        self.log.info(
                            "reconnected after %s failure(s)",
                            failures,
                        )
                    with self.db():
                        services.mailbox_report_connected(mailbox_id=self.mailbox_id)
                    self._listen(session, state)
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
                            Text(
                                texts.LEASE_LOST_IN_STEP,
                                mailbox=str(self.mailbox_id),
                                error=describe_error(exc, self.conn),
                            )
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
                    metrics.IMAP_CONNECTION_FAILURES.labels(mailbox=self.mailbox_name).inc()
                    connected_for = None if opened_at is None else time.monotonic() - opened_at
                    failures = failures_counted(failures, connected_for) + 1
                    if failures == 1:
                        last_error = ""  # a new episode: its first problem is an ERROR
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

    def _listen(self, session: ImapSession, state: FolderState) -> None:
        uidvalidity = state.uidvalidity
        start_uid = self._start_uid(session, state)
        with self.db():
            last_uid = recording.checkpoint_sync(
                lease=self.lease,
                folder=self.conn.folder,
                uidvalidity=uidvalidity,
                start_uid=start_uid,
            )
        has_idle = b"IDLE" in session.client.capabilities()
        refresh = settings.PRICEFEED_IMAP_IDLE_REFRESH
        check = settings.PRICEFEED_IMAP_CHECK_INTERVAL
        selected_at = time.monotonic()
        announced = True  # the last IDLE ended on something the server said
        silent = 0  # IDLEs in a row that said nothing of mail our own search then found
        told = False
        while not self.stopping.is_set():
            found = self._catch_up(session, uidvalidity, last_uid)
            if found != last_uid:
                silent = 0 if announced else silent + 1
                if silent == SILENT_IDLE_HINT and not told:
                    # Once per connection: the operator's hint that the server's IDLE
                    # polls or says nothing (docs/operations.md, "IMAP servers").
                    told = True
                    self.log.info(
                        "new mail found by our own search %s times in a row, never "
                        "announced in IDLE: the server's IDLE may poll; "
                        "PRICEFEED_IMAP_CHECK_INTERVAL bounds the wait",
                        silent,
                        extra={"action": "idle_silent"},
                    )
            last_uid = found
            if self.stopping.is_set():
                return
            self._check_lease()
            if has_idle:
                # Re-issued well before the server's 29-minute limit (RFC 2177), and left
                # every check interval for a search of our own, whatever the server's IDLE
                # does (Cyrus without idled and Courier without FAM poll once a minute).
                idled = time.monotonic()
                responses = session.idle_wait(
                    idle_timeout(refresh, check, time.monotonic() - selected_at),
                    self.waker.read_fd,
                    keep_going=self.lease_valid,
                )
                announced = bool(responses)
                if self.log.isEnabledFor(logging.DEBUG):
                    self.log.debug(
                        "IDLE ended after %.2fs: %s; woken %s, lease valid %s",
                        time.monotonic() - idled,
                        responses or "nothing said",
                        self.waker.pending(),
                        self.lease_valid(),
                    )
                self.waker.drain()
            else:
                self._sleep(check if check > 0 else POLL_WITHOUT_IDLE)
                session.noop()
            self._check_lease()
            if time.monotonic() - selected_at >= refresh:
                # An idling client is not told of a UIDVALIDITY change; a SELECT is.
                selected_at = time.monotonic()
                state = session.select(self.conn.folder)
                if state.uidvalidity != uidvalidity:
                    raise UidValidityChanged(
                        Text(
                            texts.UIDVALIDITY_CHANGED,
                            old=str(uidvalidity),
                            new=str(state.uidvalidity),
                        )
                    )

    def _start_uid(self, session: ImapSession, state: FolderState) -> int:
        """Where the folder's checkpoint starts if it has none yet: 0 (the whole folder is
        read), or for ``backfill = new`` the newest UID in the folder now. Asked of the
        server only when needed: a server whose SELECT gives no UIDNEXT costs a STATUS."""
        if self.backfill != Mailbox.Backfill.NEW:
            return 0
        if state.uidnext is None:
            with self.db():
                if recording.checkpoint_exists(mailbox_id=self.mailbox_id, folder=self.conn.folder):
                    return 0  # not used: the checkpoint is there
        newest, source = session.newest_uid(state)
        if state.uidnext is None:
            self.log.info(
                "no UIDNEXT on SELECT: backfill new starts after uid %s (from %s)",
                newest,
                source,
                extra={"action": "uidnext_fallback"},
            )
        return newest

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
            # INTERNALDATE rides along with the sizes: when the server got each message,
            # for pricefeed_message_arrival_to_recorded_seconds (core.metrics).
            window, uids = uids[: count * 10], uids[count * 10 :]
            arrivals = session.sizes_and_dates(window)
            # A UID that vanished between SEARCH and FETCH (expunged) is skipped.
            window = [uid for uid in window if uid in arrivals]
            if not window:
                continue
            grant = self._admit(session, [arrivals[uid][0] for uid in window])
            if not grant.messages:
                return last_uid
            chunk, uids = window[: grant.messages], window[grant.messages :] + uids
            try:
                last_uid = self._record_chunk(session, uidvalidity, chunk, last_uid, arrivals)
            finally:
                self.admission.settle(self.mailbox_id, grant)
        return last_uid

    def _admit(self, session: ImapSession, sizes: list[int]) -> Grant:
        """Waits (keeping lease and connection) until some of the messages of ``sizes``
        may be fetched."""
        limit = settings.PRICEFEED_MAX_MESSAGE_BYTES
        # A message over the size limit is recorded by its header alone, and refused.
        sizes = [size if size <= limit else 0 for size in sizes]
        with self.db():
            grant = self.admission.grant(self.mailbox_id, sizes)
        if grant.messages:
            return grant
        self.log.info(
            "in-flight limit reached: fetching paused",
            extra={"action": "admission_paused"},
        )
        last_noop = time.monotonic()
        recheck = None
        while not self.stopping.is_set():
            recheck = admission_recheck(recheck)
            self._sleep(recheck)
            self._check_lease()
            with self.db():
                grant = self.admission.grant(self.mailbox_id, sizes)
            if grant.messages:
                self.log.info("fetching resumed")
                return grant
            if time.monotonic() - last_noop > KEEPALIVE:
                session.noop()  # an authenticated session idle too long gets logged out
                last_noop = time.monotonic()
        return grant

    def _record_chunk(
        self,
        session: ImapSession,
        uidvalidity: int,
        chunk: list[int],
        last_uid: int,
        arrivals: dict[int, tuple[int, datetime | None]],
    ) -> int:
        limit = settings.PRICEFEED_MAX_MESSAGE_BYTES
        sizes = {uid: size for uid, (size, _date) in arrivals.items()}
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
                recording.Fetched(
                    uid=uid,
                    size=sizes.get(uid, 0),
                    raw=bodies[uid],
                    internal_date=arrivals[uid][1] if uid in arrivals else None,
                )
                for uid in small
                if uid in bodies
            ] + [
                recording.Fetched(
                    uid=uid,
                    size=sizes.get(uid, 0),
                    header=headers.get(uid, b""),
                    internal_date=arrivals[uid][1] if uid in arrivals else None,
                )
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
