"""The one adapter over imapclient: connecting safely, reading without changing the
mailbox, and an IDLE wait that survives imapclient 4.1's pitfalls.

Nothing here touches the database. A session belongs to the thread that opened it.

Connecting safely: the address and plain-text policy of ``mailboxes.addresses`` first,
then a connection to exactly the addresses it checked (imaplib never looks the name up
again), with certificate and host name verified against the name.

Why the IDLE wait does not use ``IMAPClient.idle_check()``: it reads a non-blocking
socket and loses the connection when a response line arrives split across TCP segments
(mjs/imapclient#519); it never looks at responses already sitting in imaplib's read
buffer (Dovecot sends a pending ``* N EXISTS`` in the same segment as ``+ idling``); and
after EOF it returns ``[]`` as if nothing happened. Instead we wait for readability of
the socket, the buffer, or our own wake-up pipe, and then leave IDLE with ``DONE``,
which reads the responses in blocking mode with a timeout. Every wake-up is followed by
a ``UID SEARCH`` catch-up, so what IDLE says is only a hint, never the source of truth.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import selectors
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

import imapclient
from django.conf import settings as django_settings
from imapclient import imap4, tls
from imapclient.exceptions import (
    CapabilityError,
    IMAPClientAbortError,
    IMAPClientError,
    LoginError,
)
from imapclient.imapclient import SocketTimeout
from imapclient.response_parser import parse_fetch_response

from core.crypto import UnreadableSecret
from core.logs import first_line
from core.texts import gettext_noop

from .addresses import ConnectionPolicy, Resolved, connect
from .exceptions import (
    CredentialsMissing,
    CredentialsUnreadable,
    FolderMissing,
    ImapError,
    ImapSettingsError,
    ServerClosed,
)
from .texts import Text, text_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    security: str  # "ssl" | "starttls" | "plain"
    username: str
    password: str
    folder: str = "INBOX"
    connect_timeout: float = 15.0
    timeout: float = 60.0

    def __repr__(self) -> str:  # never print the password
        return (
            f"ConnectionSettings({self.security}://{self.username}@{self.host}:{self.port}"
            f"/{self.folder})"
        )


@dataclass(frozen=True)
class FolderState:
    uidvalidity: int
    exists: int
    uidnext: int | None


def describe_error(exc: BaseException, settings: ConnectionSettings | None = None) -> str:
    """Turns a connection problem into one line an operator can act on (a ``Text``: in
    English, and translatable where it is shown)."""
    where = f"{settings.host}:{settings.port}" if settings else Text(gettext_noop("the server"))
    if isinstance(exc, LoginError):
        return Text(
            gettext_noop("authentication failed for user %(user)s"),
            user=repr(settings.username if settings else ""),
        )
    if isinstance(
        exc, FolderMissing | CredentialsUnreadable | CredentialsMissing | ImapSettingsError
    ):
        return text_of(exc)
    if isinstance(exc, ssl.SSLCertVerificationError):
        # OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
        if exc.verify_code in (62, 64):
            return Text(
                gettext_noop(
                    "TLS certificate of %(where)s is for another host (%(reason)s); connect "
                    "by a name the certificate lists"
                ),
                where=where,
                reason=exc.verify_message.rstrip("."),
            )
        return Text(
            gettext_noop("TLS certificate of %(where)s not trusted: %(reason)s"),
            where=where,
            reason=exc.verify_message,
        )
    if isinstance(exc, ssl.SSLError):
        # What a client speaking TLS first reads from a plain port: the IMAP greeting.
        if exc.reason == "WRONG_VERSION_NUMBER":
            return Text(
                gettext_noop(
                    "TLS handshake with %(where)s failed: the server does not speak TLS on "
                    "that port; check the security setting"
                ),
                where=where,
            )
        return Text(
            gettext_noop(
                "TLS handshake with %(where)s failed (%(reason)s); check the security setting"
            ),
            where=where,
            reason=str(exc.reason or exc),
        )
    if isinstance(exc, CapabilityError) and "STARTTLS" in str(exc):
        return Text(
            gettext_noop("%(where)s does not offer STARTTLS; choose SSL/TLS or plain"),
            where=where,
        )
    if isinstance(exc, socket.gaierror):
        return Text(
            gettext_noop("host %(host)s not found (%(reason)s)"),
            host=repr(settings.host if settings else ""),
            reason=str(exc.strerror),
        )
    if isinstance(exc, ConnectionRefusedError):
        return Text(
            gettext_noop("connection to %(where)s refused (nothing listening?)"), where=where
        )
    if isinstance(exc, TimeoutError | socket.timeout):
        if settings and settings.security != "ssl":
            # An implicit-TLS port waits for the client's handshake and never greets.
            return Text(
                gettext_noop(
                    "%(where)s did not answer in time; if that port expects TLS from the "
                    "start, choose SSL/TLS"
                ),
                where=where,
            )
        return Text(gettext_noop("%(where)s did not answer in time"), where=where)
    if isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return Text(
            gettext_noop("%(where)s unreachable (%(reason)s)"),
            where=where,
            reason=str(exc.strerror),
        )
    if isinstance(exc, ServerClosed):
        return Text(
            gettext_noop("%(where)s closed the connection: %(reason)s"),
            where=where,
            reason=str(exc),
        )
    if isinstance(exc, IMAPClientError | ImapError):
        return Text(
            gettext_noop("IMAP error from %(where)s: %(reason)s"), where=where, reason=str(exc)
        )
    if isinstance(exc, OSError):
        return Text(
            gettext_noop("network error talking to %(where)s: %(reason)s"),
            where=where,
            reason=str(exc.strerror or exc),
        )
    # Anything else (a database error, say): its first line, the one that names it.
    return f"{type(exc).__name__}: {first_line(exc)}"


def _tune_socket(sock: socket.socket) -> None:
    # imaplib sends a literal and its CRLF in separate send() calls: without NODELAY
    # every such command waits for a delayed ACK (~40 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # A half-open connection (peer gone without FIN) is noticed while idling.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 15), ("TCP_KEEPCNT", 4)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def tls_context() -> ssl.SSLContext:
    """The process's client TLS context: certificate and host name verified, the system
    store plus ``PRICEFEED_IMAP_CA_FILE`` (trusted in addition: ``cafile=`` would trust
    it instead, and every mailbox on a publicly certified server would fail once one
    needed a CA file). Shared by all connections: a context holds the parsed CA store,
    about a megabyte, which a hundred mailboxes must not each carry. A changed CA file
    is picked up by the next connection."""
    ca_file = django_settings.PRICEFEED_IMAP_CA_FILE
    try:
        stamp = os.stat(ca_file).st_mtime_ns if ca_file else 0
    except OSError:
        stamp = -1
    return _tls_context(ca_file, stamp)


@functools.lru_cache(maxsize=4)
def _tls_context(ca_file: str, _stamp: int) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_file:
        try:
            context.load_verify_locations(cafile=ca_file)
        except OSError as exc:  # missing, unreadable, or no PEM certificate in it
            raise ImapSettingsError(
                f"cannot load PRICEFEED_IMAP_CA_FILE {ca_file!r}: {exc.strerror or exc}"
            ) from exc
    return context


class _PinnedPlain(imap4.IMAP4WithTimeout):
    """imaplib's IMAP4 connected to addresses checked beforehand (no lookup of its own)."""

    def __init__(
        self, host: str, port: int, timeout: float | None, addresses: Sequence[Resolved]
    ) -> None:
        self._addresses = addresses
        super().__init__(host, port, timeout)

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        return connect(self._addresses, timeout if timeout is not None else self._timeout)


class _PinnedTLS(tls.IMAP4_TLS):
    """Implicit TLS to addresses checked beforehand; the certificate is verified against
    ``host``, the name (SNI and host name check), not the address connected to."""

    def __init__(
        self,
        host: str,
        port: int,
        context: ssl.SSLContext | None,
        timeout: float | None,
        addresses: Sequence[Resolved],
    ) -> None:
        self._addresses = addresses
        super().__init__(host, port, context, timeout)

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = connect(self._addresses, timeout if timeout is not None else self._timeout)
        try:
            return tls.wrap_socket(sock, self.ssl_context, self.host)
        except BaseException:
            sock.close()
            raise


class _PinnedClient(imapclient.IMAPClient):
    """An IMAPClient whose connection goes to ``addresses`` (the ones the policy checked)
    while ``host`` stays the name TLS verifies, STARTTLS included (imaplib wraps its
    socket with ``server_hostname=self.host``)."""

    def __init__(self, host: str, addresses: Sequence[Resolved], **kwargs: object) -> None:
        self._addresses = addresses
        super().__init__(host, **kwargs)

    def _create_IMAP4(self):
        timeout = getattr(self._timeout, "connect", None)
        if self.ssl:
            return _PinnedTLS(self.host, self.port, self.ssl_context, timeout, self._addresses)
        return _PinnedPlain(self.host, self.port, timeout, self._addresses)


class ImapSession:
    """A logged-in IMAP connection with its folder selected read-only.

    Every connection goes through the address policy (``mailboxes.addresses``): plain
    text only when allowed, the host resolved once and every address it resolves to
    checked, then connected to exactly those addresses.
    """

    def __init__(self, settings: ConnectionSettings) -> None:
        self.settings = settings
        self._client: imapclient.IMAPClient | None = None
        self.logged_in = False

    # -- connection ------------------------------------------------------------------

    def open(self) -> FolderState:
        """Connects, secures, logs in and selects the folder read-only."""
        s = self.settings
        if isinstance(s.password, UnreadableSecret):
            raise CredentialsUnreadable(
                Text(
                    gettext_noop("%(reason)s; re-enter the mailbox password"),
                    reason=s.password.reason,
                )
            )
        if not s.password:
            raise CredentialsMissing(
                Text(
                    gettext_noop(
                        "no password stored for this server (host, port, security or "
                        "username changed since it was entered); enter the mailbox password"
                    )
                )
            )
        policy = ConnectionPolicy.current()
        policy.check_security(s.security)
        context = tls_context() if s.security != "plain" else None
        addresses = policy.addresses(s.host, s.port)
        timeout = SocketTimeout(connect=s.connect_timeout, read=s.timeout)
        client = _PinnedClient(
            s.host,
            addresses,
            port=s.port,
            ssl=s.security == "ssl",
            ssl_context=context,
            timeout=timeout,
        )
        if not isinstance(client._imap, _PinnedPlain | _PinnedTLS):
            # imapclient no longer builds its connection in _create_IMAP4, so the
            # address check did not hold: drop it before anything is sent.
            client.shutdown()
            raise ImapError("imapclient bypassed the address check; connection dropped")
        # INTERNALDATE as the server wrote it, with its offset (imapclient otherwise
        # turns it into a naive local time).
        client.normalise_times = False
        self._client = client
        try:
            _tune_socket(client.socket())
            if s.security == "starttls":
                client.starttls(context)
                _tune_socket(client.socket())
            client.login(s.username, s.password)
            self.logged_in = True
            return self.select(s.folder)
        except BaseException:
            self.close()
            raise

    def select(self, folder: str) -> FolderState:
        try:
            info = self.client.select_folder(folder, readonly=True)
        except IMAPClientError as exc:
            if "select failed" in str(exc).lower():
                raise FolderMissing(
                    Text(
                        gettext_noop("folder %(folder)s cannot be selected: %(reason)s"),
                        folder=repr(folder),
                        reason=str(exc),
                    )
                ) from exc
            raise
        return FolderState(
            uidvalidity=int(info[b"UIDVALIDITY"]),
            exists=int(info.get(b"EXISTS", 0)),
            uidnext=int(info[b"UIDNEXT"]) if b"UIDNEXT" in info else None,
        )

    def newest_uid(self, state: FolderState) -> tuple[int, str]:
        """The UID at or below which every message of the selected folder lies now (0
        for an empty folder), and where it came from: UIDNEXT − 1 from the SELECT; where
        the server sent none (Courier), from ``STATUS <folder> (UIDNEXT)``; where that
        fails too, the UID of the last message (``UID FETCH * (UID)``: one message's
        answer, where ``UID SEARCH ALL`` would list the whole folder). Raises ImapError
        when none of them tells."""
        if state.uidnext is not None:
            return state.uidnext - 1, "UIDNEXT of the SELECT"
        folder = self.settings.folder
        try:
            status = self.client.folder_status(folder, ["UIDNEXT"])
        except IMAPClientAbortError:
            raise  # the connection is gone: the listener reconnects
        except IMAPClientError as exc:
            status_error = first_line(exc)
        else:
            uidnext = status.get(b"UIDNEXT")
            if isinstance(uidnext, int) and uidnext > 0:
                return uidnext - 1, "STATUS (UIDNEXT)"
            status_error = f"no UIDNEXT in the answer: {status!r}"
        if not state.exists:
            return 0, "an empty folder"
        try:
            # Through imaplib: IMAPClient.fetch() turns the message set into ints.
            typ, data = self.client._imap.uid("FETCH", "*", "(UID)")
            found = parse_fetch_response([d for d in data if d], False, True) if typ == "OK" else {}
        except IMAPClientAbortError:
            raise
        except IMAPClientError as exc:
            fetch_error = first_line(exc)
        else:
            # Keyed by UID (the parser's uid_is_key); unsolicited FETCHes of other
            # messages may come along, none with a UID above the last message's.
            uids = [uid for uid in found if isinstance(uid, int)]
            if uids:
                return max(uids), "UID FETCH *"
            fetch_error = "no message in the answer" if typ == "OK" else f"{typ} {data!r}"
        raise ImapError(
            f"cannot tell the newest UID of folder {folder!r}: no UIDNEXT on SELECT, "
            f"STATUS failed ({status_error}), UID FETCH * failed ({fetch_error})"
        )

    @property
    def client(self) -> imapclient.IMAPClient:
        if self._client is None:
            raise ImapError("session is not open")
        return self._client

    def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.logout()
        except Exception:
            try:
                client.shutdown()
            except Exception:
                pass

    def __enter__(self) -> ImapSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------

    def uids_after(self, last_uid: int) -> list[int]:
        """UIDs above ``last_uid`` in ascending order (``n:*`` always includes the
        highest UID, so the result is filtered)."""
        # NOOP first: a server may only refresh the session's view of the folder on a
        # command that allows untagged updates (pymap's SEARCH alone saw a stale view).
        self.client.noop()
        self.new_mail_announced()  # what NOOP announced, this SEARCH covers
        found = self.client.search(["UID", f"{last_uid + 1}:*"])
        return sorted(uid for uid in found if uid > last_uid)

    def sizes(self, uids: Iterable[int]) -> dict[int, int]:
        return {uid: size for uid, (size, _date) in self.sizes_and_dates(uids).items()}

    def sizes_and_dates(self, uids: Iterable[int]) -> dict[int, tuple[int, datetime | None]]:
        """``RFC822.SIZE`` and ``INTERNALDATE`` (when the server got the message, on its
        clock; None when it sent none, or one that cannot be read) in one FETCH."""
        uids = list(uids)
        if not uids:
            return {}
        data = self.client.fetch(uids, ["RFC822.SIZE", "INTERNALDATE"])
        asked = set(uids)
        return {
            uid: (int(item[b"RFC822.SIZE"]), _aware(item.get(b"INTERNALDATE")))
            for uid, item in data.items()
            if uid in asked
        }

    def bodies(
        self, uids: Iterable[int], sizes: dict[int, int] | None = None, *, limit: int = 0
    ) -> dict[int, bytes]:
        """Whole messages with ``BODY.PEEK[]``: the \\Seen flag is never set.

        A message whose size (from ``sizes``) is over PIECE_BYTES is read in pieces of
        that many bytes into one buffer of its size: in one FETCH the client's buffers
        held about four copies of it, this way 1.2. Reading stops once
        ``limit`` bytes (when given) are passed; the caller refuses what is too large."""
        uids = list(uids)
        sizes = sizes or {}
        whole = [uid for uid in uids if sizes.get(uid, 0) <= PIECE_BYTES]
        found = self._fetch(whole, "BODY.PEEK[]", b"BODY[]")
        for uid in uids:
            if uid not in whole:
                body = self._body_in_pieces(uid, sizes[uid], limit)
                if body is not None:
                    found[uid] = body
        return found

    def _body_in_pieces(self, uid: int, size: int, limit: int) -> bytes | None:
        # A bytearray is a bytes-like value for everything downstream (hashing, the
        # header scan, the database driver): no copy is made to turn it into bytes.
        body = bytearray(min(size, limit + PIECE_BYTES) if limit else size)
        offset = 0
        while True:
            data = self.client.fetch([uid], [f"BODY.PEEK[]<{offset}.{PIECE_BYTES}>"])
            piece = data.get(uid, {}).get(f"BODY[]<{offset}>".encode())
            if piece is None:
                if not offset:
                    return None  # expunged meanwhile
                break
            body[offset : offset + len(piece)] = piece
            offset += len(piece)
            if len(piece) < PIECE_BYTES or (limit and offset > limit):
                break
        del body[offset:]
        return body  # type: ignore[return-value]

    def headers(self, uids: Iterable[int]) -> dict[int, bytes]:
        return self._fetch(uids, "BODY.PEEK[HEADER]", b"BODY[HEADER]")

    def _fetch(self, uids: Iterable[int], item: str, key: bytes) -> dict[int, bytes]:
        uids = list(uids)
        if not uids:
            return {}
        data = self.client.fetch(uids, [item])
        return {uid: bytes(value.get(key) or b"") for uid, value in data.items() if uid in uids}

    # -- waiting ---------------------------------------------------------------------

    def idle_wait(
        self,
        timeout: float,
        wake_fd: int | None = None,
        keep_going: Callable[[], bool] | None = None,
    ) -> list:
        """IDLEs until the server says something, ``timeout`` passes, ``wake_fd``
        becomes readable or ``keep_going()`` (asked every second) turns false; returns
        the untagged responses seen (a hint only: empty when the wait ended by itself):
        raw lines for those that came before the server's continuation, parsed ones
        after."""
        client = self.client
        imap = client._imap
        tag = imap._command("IDLE")
        early: list = []
        while True:
            # Untagged data may legally come before the continuation; a tagged answer
            # here means the server refused IDLE.
            resp = imap._get_response()
            if imap.tagged_commands.get(tag):
                typ, data = imap.tagged_commands.pop(tag)
                raise ImapError(f"IDLE refused: {typ} {data}")
            if resp is None:
                break
            early.append(resp)
        client._idle_tag = tag
        try:
            if not early and not self._buffered():
                with selectors.DefaultSelector() as sel:
                    sel.register(client.socket(), selectors.EVENT_READ)
                    if wake_fd is not None:
                        sel.register(wake_fd, selectors.EVENT_READ)
                    deadline = time.monotonic() + timeout
                    while (left := deadline - time.monotonic()) > 0:
                        if sel.select(min(left, 1.0) if keep_going else left):
                            break
                        if keep_going is not None and not keep_going():
                            break
        finally:
            _text, responses = client.idle_done()
        untagged = imap.untagged_responses
        if "BYE" in untagged:
            raise ServerClosed(untagged["BYE"][-1].decode(errors="replace"))
        # imaplib keeps every untagged response it has ever seen; drop them, the
        # catch-up that follows reads the truth from the server.
        untagged.clear()
        return [*early, *responses]

    def _buffered(self) -> bool:
        """True when a response is already waiting in imaplib's read buffer."""
        sock = self.client.socket()
        sock.settimeout(0)
        try:
            return bool(self.client._imap.file.peek(1))
        except (BlockingIOError, ssl.SSLWantReadError, InterruptedError):
            return False
        finally:
            sock.settimeout(self.settings.timeout)

    def new_mail_announced(self) -> bool:
        """True (once) when the server announced new mail (``* N EXISTS``) in a response
        to some other command since the last call.

        A server tells each session about a new message once: if the announcement
        arrives with a FETCH after our SEARCH, the server will not repeat it in IDLE,
        so the caller must search again instead of idling.
        """
        untagged = self.client._imap.untagged_responses
        announced = untagged.pop("EXISTS", None) is not None
        return untagged.pop("RECENT", None) is not None or announced

    def noop(self) -> None:
        self.client.noop()


# Messages over this size are fetched in pieces of this size (see ImapSession.bodies).
# Smaller pieces cost round trips (25 for the largest message allowed by default) and
# save memory: fetching a 22 MB message took 1.9x its size in pieces of 4 MiB, 1.2x in
# pieces of 1 MiB (imaplib and imapclient copy each piece a few times).
PIECE_BYTES = 1024 * 1024


def _aware(value: object) -> datetime | None:
    """An INTERNALDATE as imapclient parsed it, when it is a time with its offset."""
    if isinstance(value, datetime) and value.utcoffset() is not None:
        return value
    return None


def batches(
    uids: list[int], sizes: dict[int, int], *, count: int, max_bytes: int
) -> Iterator[list[int]]:
    """Splits UIDs (ascending) into fetch batches bounded by count and total size."""
    batch: list[int] = []
    total = 0
    for uid in uids:
        size = sizes.get(uid, 0)
        if batch and (len(batch) >= count or total + size > max_bytes):
            yield batch
            batch, total = [], 0
        batch.append(uid)
        total += size
    if batch:
        yield batch


def check_connection(settings: ConnectionSettings) -> str:
    """Connects, logs in and selects the folder; returns a one-line summary.

    Raises ImapError with an operator-readable message on any problem (describe_error:
    as detailed as the listener's last error).
    """
    session = ImapSession(settings)
    try:
        return _check(session)
    except Exception as exc:
        raise ImapError(describe_error(exc, settings)) from exc
    finally:
        session.close()


def probe_connection(settings: ConnectionSettings) -> str:
    """``check_connection`` for *Test connection*, whose result anyone who may edit a
    mailbox reads: a failure before the login was accepted tells nothing about the peer
    (``probe_error``)."""
    session = ImapSession(settings)
    try:
        return _check(session)
    except Exception as exc:
        raise ImapError(probe_error(exc, settings, logged_in=session.logged_in)) from exc
    finally:
        session.close()


def _check(session: ImapSession) -> str:
    settings = session.settings
    state = session.open()
    capabilities = session.client.capabilities()
    if b"IDLE" in capabilities:
        idle = Text(gettext_noop("IDLE supported"))
    else:
        idle = Text(gettext_noop("IDLE NOT supported (polling)"))
    return Text(
        gettext_noop(
            "connected to %(host)s:%(port)s, folder %(folder)s has %(count)s message(s), "
            "UIDVALIDITY %(uidvalidity)s; %(idle)s"
        ),
        host=settings.host,
        port=str(settings.port),
        folder=repr(settings.folder),
        count=state.exists,
        uidvalidity=str(state.uidvalidity),
        idle=idle,
    )


SECURITY_NAMES = {"ssl": "SSL/TLS", "starttls": "STARTTLS", "plain": gettext_noop("plain text")}


def probe_error(exc: BaseException, settings: ConnectionSettings, *, logged_in: bool) -> str:
    """One line about a failed connection test that says nothing about what answered
    before the login was accepted: refused, timed out, unreachable, reset, no TLS, a
    certificate not trusted, STARTTLS missing, any greeting or banner — all read "could
    not connect to host:port ...", so the test is no port scanner and shows no banner.
    pricefeed's own refusals (address, plain text, credentials, CA file), a host that
    does not resolve, a refused login and a missing folder are specific; so is what
    fails after the login was accepted."""
    if isinstance(exc, ImapSettingsError | CredentialsUnreadable | CredentialsMissing):
        return text_of(exc)
    if isinstance(exc, socket.gaierror):  # our resolver's answer, not the peer's
        return describe_error(exc, settings)
    if isinstance(exc, LoginError):
        return Text(
            gettext_noop("authentication failed for user %(user)s"), user=repr(settings.username)
        )
    if isinstance(exc, FolderMissing):
        return Text(
            gettext_noop("logged in; folder %(folder)s cannot be selected"),
            folder=repr(settings.folder),
        )
    if logged_in:
        return Text(gettext_noop("logged in, then: %(error)s"), error=describe_error(exc, settings))
    security = SECURITY_NAMES.get(settings.security, settings.security)
    return Text(
        gettext_noop(
            "could not connect to %(host)s:%(port)s with %(security)s (no connection, no "
            "answer, or no verified IMAP server there; check host, port, security and the "
            "server's certificate)"
        ),
        host=settings.host,
        port=str(settings.port),
        security=Text(security),
    )
