"""mailboxes.imap: its pure parts, the policy every connection goes through, and
connection checks against a closed port and a recording server."""

from __future__ import annotations

import dataclasses
import socket
import ssl

import pytest
from imapclient.exceptions import (
    CapabilityError,
    IMAPClientAbortError,
    IMAPClientError,
    LoginError,
)

from devkit.servers import free_port
from mailboxes.exceptions import AddressNotAllowed, FolderMissing, ServerClosed
from mailboxes.imap import (
    ConnectionSettings,
    FolderState,
    ImapError,
    ImapSession,
    batches,
    check_connection,
    describe_error,
    probe_connection,
    probe_error,
)
from tests.recorder import RecordingServer

SECRET = "hunter2-Пароль"
SETTINGS = ConnectionSettings(
    host="imap.supplier.example",
    port=993,
    security="ssl",
    username="buyer",
    password=SECRET,
)


# -- batches ----------------------------------------------------------------------------------


def test_batches_split_by_count():
    uids = [1, 2, 3, 4, 5]

    assert list(batches(uids, dict.fromkeys(uids, 10), count=2, max_bytes=10_000)) == [
        [1, 2],
        [3, 4],
        [5],
    ]


def test_batches_split_by_byte_budget():
    sizes = {1: 400, 2: 400, 3: 400, 4: 100}

    assert list(batches([1, 2, 3, 4], sizes, count=100, max_bytes=1000)) == [[1, 2], [3, 4]]


def test_batch_may_fill_the_byte_budget_exactly():
    sizes = {1: 500, 2: 500, 3: 1}

    assert list(batches([1, 2, 3], sizes, count=100, max_bytes=1000)) == [[1, 2], [3]]


def test_message_larger_than_the_byte_budget_gets_a_batch_of_its_own():
    sizes = {1: 10, 2: 50_000, 3: 10}

    assert list(batches([1, 2, 3], sizes, count=100, max_bytes=1000)) == [[1], [2], [3]]


def test_huge_first_message_gets_a_batch_of_its_own():
    sizes = {1: 50_000, 2: 10, 3: 10}

    assert list(batches([1, 2, 3], sizes, count=100, max_bytes=1000)) == [[1], [2, 3]]


def test_batches_keep_uid_order_and_lose_nothing():
    uids = list(range(1, 101))
    sizes = {uid: (uid * 37) % 300 for uid in uids}

    result = list(batches(uids, sizes, count=7, max_bytes=900))

    assert [uid for batch in result for uid in batch] == uids
    assert all(len(batch) <= 7 for batch in result)
    assert all(len(b) == 1 or sum(sizes[u] for u in b) <= 900 for b in result)


def test_no_uids_give_no_batches():
    assert list(batches([], {}, count=10, max_bytes=100)) == []


def test_uid_with_unknown_size_counts_as_empty():
    assert list(batches([1, 2, 3], {}, count=10, max_bytes=1)) == [[1, 2, 3]]


# -- describe_error ---------------------------------------------------------------------------


def test_login_error_says_authentication_failed_for_the_user():
    message = describe_error(LoginError("[AUTHENTICATIONFAILED] Invalid credentials"), SETTINGS)

    assert message == "authentication failed for user 'buyer'"


def test_connection_refused_names_host_and_port():
    message = describe_error(ConnectionRefusedError(111, "Connection refused"), SETTINGS)

    assert message == "connection to imap.supplier.example:993 refused (nothing listening?)"


def test_unknown_host_says_host_not_found():
    exc = socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    message = describe_error(exc, SETTINGS)

    assert message == "host 'imap.supplier.example' not found (Name or service not known)"


def test_untrusted_certificate_names_the_verification_problem():
    exc = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify")
    # What the ssl module sets on a real verification failure.
    exc.verify_code = 18
    exc.verify_message = "self-signed certificate"

    message = describe_error(exc, SETTINGS)

    assert message == (
        "TLS certificate of imap.supplier.example:993 not trusted: self-signed certificate"
    )


def test_timeout_says_the_server_did_not_answer():
    # socket.timeout is TimeoutError since Python 3.10.
    assert (
        describe_error(TimeoutError("timed out"), SETTINGS)
        == "imap.supplier.example:993 did not answer in time"
    )


@pytest.mark.parametrize(
    "exc",
    [
        LoginError("no"),
        ConnectionRefusedError(111, "Connection refused"),
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        TimeoutError("timed out"),
    ],
)
def test_described_errors_are_one_line_without_the_password(exc):
    message = describe_error(exc, SETTINGS)

    assert message
    assert "\n" not in message
    assert SECRET not in message


def test_describe_error_works_without_settings():
    assert describe_error(ConnectionRefusedError(111, "refused")).startswith(
        "connection to the server refused"
    )


def test_check_connection_to_a_closed_port_raises_an_operator_message():
    closed = ConnectionSettings(
        host="127.0.0.1", port=free_port(), security="plain", username="u", password=SECRET
    )

    with pytest.raises(ImapError, match=r"^connection to 127\.0\.0\.1:\d+ refused"):
        check_connection(closed)


# -- the policy on every connection, and probe_error ------------------------------------------


@pytest.fixture
def production_policy(settings):
    settings.PRICEFEED_IMAP_ALLOW_PLAIN = False
    settings.PRICEFEED_IMAP_ALLOWED_NETWORKS = []
    return settings


def test_plain_text_connection_is_refused_before_connecting(production_policy):
    with RecordingServer() as server:
        plain = dataclasses.replace(SETTINGS, host="8.8.8.8", port=server.port, security="plain")

        with pytest.raises(ImapError) as info:
            check_connection(plain)

    assert str(info.value) == (
        "plain-text IMAP (no TLS) is not allowed (PRICEFEED_IMAP_ALLOW_PLAIN is off); "
        "choose SSL/TLS or STARTTLS"
    )


@pytest.mark.parametrize("check", [check_connection, probe_connection])
def test_a_loopback_server_is_refused_without_a_connection_attempt(production_policy, check):
    with RecordingServer() as server:
        target = dataclasses.replace(SETTINGS, host="127.0.0.1", port=server.port)

        with pytest.raises(ImapError) as info:
            check(target)

    assert str(info.value) == (
        "127.0.0.1 is not a public address (loopback); IMAP connections to it need "
        "PRICEFEED_IMAP_ALLOWED_NETWORKS to hold it"
    )
    assert server.connections == 0


def test_an_empty_password_is_never_sent():
    with RecordingServer() as server:
        target = dataclasses.replace(
            SETTINGS, host="127.0.0.1", port=server.port, security="plain", password=""
        )

        with pytest.raises(ImapError) as info:
            probe_connection(target)

    assert str(info.value).startswith("no password stored for this server")
    assert server.connections == 0


def test_a_session_connects_to_the_address_checked_without_a_lookup_of_its_own(monkeypatch):
    """DNS rebinding: imapclient and imaplib never resolve the name again; the name
    answered a loopback address (allowed here) first and a private one afterwards."""
    lookups: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, *args, **kwargs):
        lookups.append(host)
        return real("127.0.0.1" if len(lookups) == 1 else "10.255.255.1", *args, **kwargs)

    with RecordingServer() as server:
        target = dataclasses.replace(
            SETTINGS,
            host="imap.rebinding.example",
            port=server.port,
            security="plain",
            password="ascii-only",  # imaplib cannot send SECRET (no UTF8=ACCEPT here)
        )
        monkeypatch.setattr(socket, "getaddrinfo", rebinding)

        with pytest.raises(ImapError) as info:
            probe_connection(target)
        monkeypatch.undo()

    assert str(info.value) == "authentication failed for user 'buyer'"
    assert lookups == ["imap.rebinding.example"]
    assert server.connections == 1


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError(111, "Connection refused"),
        TimeoutError("timed out"),
        OSError(113, "No route to host"),
        ConnectionResetError(104, "Connection reset by peer"),
        ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"),
        ssl.SSLCertVerificationError(1, "certificate verify failed"),
        CapabilityError("Server does not support STARTTLS"),
        IMAPClientError("unexpected response: b'SSH-2.0-OpenSSH_9.2 banner'"),
        ServerClosed("* BYE internal banner"),
    ],
)
def test_probe_errors_before_login_read_alike_without_the_peers_words(exc):
    message = probe_error(exc, SETTINGS, logged_in=False)

    assert message == (
        "could not connect to imap.supplier.example:993 with SSL/TLS (no connection, no "
        "answer, or no verified IMAP server there; check host, port, security and the "
        "server's certificate)"
    )


def test_probe_errors_of_login_folder_and_lookup_are_specific():
    lookup = socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    assert probe_error(LoginError("[AUTH] no such user"), SETTINGS, logged_in=False) == (
        "authentication failed for user 'buyer'"
    )
    assert probe_error(FolderMissing("x: server text"), SETTINGS, logged_in=True) == (
        "logged in; folder 'INBOX' cannot be selected"
    )
    assert probe_error(lookup, SETTINGS, logged_in=False) == (
        "host 'imap.supplier.example' not found (Name or service not known)"
    )


def test_listener_errors_name_the_refused_setting():
    exc = AddressNotAllowed("10.0.0.1 is not a public address (private); ...")

    assert describe_error(exc, SETTINGS) == str(exc)


# -- ConnectionSettings -----------------------------------------------------------------------


def test_connection_settings_repr_never_contains_the_password():
    text = repr(SETTINGS)

    assert SECRET not in text
    assert SECRET not in str(SETTINGS)
    assert SECRET not in f"{SETTINGS!r} {SETTINGS}"
    assert text == "ConnectionSettings(ssl://buyer@imap.supplier.example:993/INBOX)"


def test_connection_settings_inside_a_container_repr_hides_the_password():
    assert SECRET not in repr({"settings": [SETTINGS]})


# -- the newest UID, for backfill = new ---------------------------------------------------


class FakeServer:
    """Stands in for IMAPClient (and its imaplib connection) in ImapSession.newest_uid:
    each answer is a value, or an exception to raise; every command asked is noted."""

    def __init__(self, *, status=None, fetch=("OK", [])) -> None:
        self.status_answer = status
        self.fetch_answer = fetch
        self.asked: list[str] = []
        self._imap = self

    def folder_status(self, folder, what):
        self.asked.append(f"STATUS {folder} ({' '.join(what)})")
        if isinstance(self.status_answer, Exception):
            raise self.status_answer
        return self.status_answer

    def uid(self, command, *args):
        self.asked.append(f"UID {command} {' '.join(args)}")
        if isinstance(self.fetch_answer, Exception):
            raise self.fetch_answer
        return self.fetch_answer


def newest(server: FakeServer, *, uidnext=None, exists=3):
    session = ImapSession(dataclasses.replace(SETTINGS, folder="Prices"))
    session._client = server  # type: ignore[assignment]
    return session.newest_uid(FolderState(uidvalidity=7, exists=exists, uidnext=uidnext))


def test_newest_uid_comes_from_the_uidnext_of_the_select_without_a_command():
    server = FakeServer()
    assert newest(server, uidnext=240) == (239, "UIDNEXT of the SELECT")
    assert server.asked == []


def test_without_uidnext_on_select_the_newest_uid_comes_from_status():
    server = FakeServer(status={b"UIDNEXT": 240})
    assert newest(server) == (239, "STATUS (UIDNEXT)")
    assert server.asked == ["STATUS Prices (UIDNEXT)"]


@pytest.mark.parametrize(
    "status",
    [IMAPClientError("STATUS command error: BAD [b'Unknown command']"), {b"MESSAGES": 3}],
    ids=["refused", "without UIDNEXT"],
)
def test_when_status_does_not_tell_the_uid_of_the_last_message_does(status):
    # Unsolicited FETCHes may come along (without a UID they are keyed by sequence).
    server = FakeServer(status=status, fetch=("OK", [b"1 (FLAGS (\\Seen))", b"3 (UID 236)"]))
    assert newest(server) == (236, "UID FETCH *")
    assert server.asked == ["STATUS Prices (UIDNEXT)", "UID FETCH * (UID)"]


def test_an_empty_folder_needs_no_fetch_when_status_fails():
    server = FakeServer(status=IMAPClientError("STATUS command error: NO"))
    assert newest(server, exists=0) == (0, "an empty folder")
    assert server.asked == ["STATUS Prices (UIDNEXT)"]


@pytest.mark.parametrize(
    "fetch", [("NO", [b"no such message"]), ("OK", [None]), IMAPClientError("FETCH: BAD")]
)
def test_a_folder_whose_newest_uid_nobody_tells_is_an_error_naming_each_try(fetch):
    server = FakeServer(status=IMAPClientError("STATUS command error: BAD"), fetch=fetch)
    with pytest.raises(ImapError) as info:
        newest(server)
    message = str(info.value)
    assert message.startswith(
        "cannot tell the newest UID of folder 'Prices': no UIDNEXT on SELECT, STATUS failed "
        "(STATUS command error: BAD), UID FETCH * failed ("
    )


def test_a_lost_connection_is_not_taken_for_a_refusal():
    server = FakeServer(status=IMAPClientAbortError("socket error: EOF"))
    with pytest.raises(IMAPClientAbortError):
        newest(server)
    assert server.asked == ["STATUS Prices (UIDNEXT)"]
