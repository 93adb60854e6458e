"""The quiet IMAP proxy of :mod:`devkit.servers.imapproxy`: its framing and what it hides
(pure), then the proxy itself in front of a real Dovecot."""

from __future__ import annotations

import select
import uuid
from collections.abc import Iterator

import pytest
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from devkit.servers import append_message
from devkit.servers.dovecot import DovecotServer
from devkit.servers.imapproxy import ImapFilter, ImapFramer, QuietImapProxy
from devkit.servers.processes import wait_until
from tests.requirements import require_dovecot

USER = "pricefeed"
PASSWORD = "secret"

BODY = b"Subject: trap\r\n\r\n* 7 EXISTS\r\nA9 OK done\r\n{3}\r\n"
SERVER_STREAM = (
    b"* 3 EXISTS\r\n"
    b"* 1 RECENT\r\n"
    b"* OK [UIDNEXT 12] Predicted next UID\r\n"
    b"* 1 FETCH (UID 11 BODY[] {" + str(len(BODY)).encode() + b"}\r\n" + BODY + b")\r\n"
    b"* 2 FETCH (UID 12 BODY[] ~{0}\r\n FLAGS ())\r\n"
    b"* STATUS INBOX (UIDNEXT 13)\r\n"
    b"A1 OK FETCH completed.\r\n"
)


def messages(framer: ImapFramer, chunks: list[bytes]) -> list[bytes]:
    """The whole commands or responses the framer cut from ``chunks``."""
    found: list[bytes] = []
    for chunk in chunks:
        for piece in framer.feed(chunk):
            if piece.starts:
                found.append(b"")
            assert found, "a piece before any message began"
            found[-1] += piece.data
    return found


def splits(data: bytes) -> Iterator[list[bytes]]:
    """``data`` cut in two at every position, and byte by byte."""
    for at in range(len(data) + 1):
        yield [data[:at], data[at:]]
    yield [data[i : i + 1] for i in range(len(data))]


# -- framing ---------------------------------------------------------------------------


def test_responses_with_literals_are_cut_the_same_wherever_the_segments_end():
    expected = [
        b"* 3 EXISTS\r\n",
        b"* 1 RECENT\r\n",
        b"* OK [UIDNEXT 12] Predicted next UID\r\n",
        SERVER_STREAM.split(b"* 2 FETCH")[0].split(b"Predicted next UID\r\n")[1],
        b"* 2 FETCH (UID 12 BODY[] ~{0}\r\n FLAGS ())\r\n",
        b"* STATUS INBOX (UIDNEXT 13)\r\n",
        b"A1 OK FETCH completed.\r\n",
    ]
    for chunks in splits(SERVER_STREAM):
        assert messages(ImapFramer(), chunks) == expected


def test_a_literal_is_passed_on_as_it_arrives_and_never_read_as_lines():
    framer = ImapFramer()
    head = b"A3 APPEND INBOX {18+}\r\n"
    pieces = framer.feed(head + b"* 1 EXISTS\r\n")
    assert [(p.data, p.starts, p.literal) for p in pieces] == [
        (head, True, False),
        (b"* 1 EXISTS\r\n", False, True),
    ]
    pieces = framer.feed(b"rest\r\n\r\nA4 NOOP\r\n")
    assert [(p.data, p.starts, p.literal) for p in pieces] == [
        (b"rest\r\n", False, True),  # the literal's last 8 bytes ...
        (b"\r\n", False, False),  # ... and the end of the APPEND line
        (b"A4 NOOP\r\n", True, False),
    ]


def test_a_line_without_its_crlf_yet_is_held_back():
    framer = ImapFramer()
    assert framer.feed(b"* 4 EXI") == []
    assert [p.data for p in framer.feed(b"STS\r\n* 5")] == [b"* 4 EXISTS\r\n"]


# -- what the filter hides -------------------------------------------------------------


def idling_filter(**options: bool) -> ImapFilter:
    imap_filter = ImapFilter(**options)
    assert imap_filter.from_client(b"A7 IDLE\r\n") == b"A7 IDLE\r\n"
    assert imap_filter.idling
    return imap_filter


def test_news_in_idle_are_hidden_until_the_server_ends_the_idle():
    imap_filter = idling_filter(hide_idle_news=True)
    assert imap_filter.from_server(b"+ idling\r\n* 4 EXISTS\r\n* 2 RECENT\r\n") == b"+ idling\r\n"
    assert imap_filter.from_client(b"DONE\r\n") == b"DONE\r\n"
    # What the server says on DONE is still part of the IDLE; its tagged answer ends it.
    assert imap_filter.from_server(b"* 5 EXISTS\r\nA7 OK Idle completed.\r\n") == (
        b"A7 OK Idle completed.\r\n"
    )
    assert not imap_filter.idling
    assert (
        imap_filter.from_server(b"* 5 EXISTS\r\nA8 OK NOOP\r\n") == b"* 5 EXISTS\r\nA8 OK NOOP\r\n"
    )
    assert imap_filter.hidden == {"exists": 2, "recent": 1}
    assert imap_filter.idles == 1


def test_a_literal_that_looks_like_news_is_passed_on_whole_in_idle():
    imap_filter = idling_filter(hide_uidnext=True)
    stream = SERVER_STREAM.replace(b"* 3 EXISTS\r\n* 1 RECENT\r\n", b"")
    stream = stream.replace(b"* OK [UIDNEXT 12] Predicted next UID\r\n", b"")
    assert imap_filter.from_server(stream) == stream
    for chunks in splits(stream):
        split_filter = idling_filter()
        assert b"".join(split_filter.from_server(chunk) for chunk in chunks) == stream
        assert not split_filter.hidden
    assert not imap_filter.hidden


def test_everything_untagged_in_idle_is_hidden_whole_literals_and_all():
    # The keepalive Dovecot sends in IDLE, and any other untagged response: a client
    # woken by them would catch up and find the mail IDLE did not announce.
    tagged = b"A1 OK FETCH completed.\r\n"
    stream = b"* OK Still here\r\n" + SERVER_STREAM
    for chunks in splits(stream):
        imap_filter = idling_filter(hide_idle_news=True)
        assert b"".join(imap_filter.from_server(chunk) for chunk in chunks) == tagged
        assert imap_filter.hidden == {"exists": 1, "recent": 1, "other": 5}


def test_news_outside_idle_pass_and_so_does_everything_unasked():
    imap_filter = ImapFilter()
    assert imap_filter.from_server(SERVER_STREAM) == SERVER_STREAM
    idle = idling_filter()
    assert idle.from_server(SERVER_STREAM) == SERVER_STREAM
    assert not imap_filter.hidden and not idle.hidden


def test_uidnext_of_select_is_hidden_and_that_of_status_is_not():
    imap_filter = ImapFilter(hide_uidnext=True)
    select_answer = (
        b"* FLAGS (\\Seen)\r\n* 3 EXISTS\r\n* OK [UIDVALIDITY 99] UIDs valid\r\n"
        b"* OK [UIDNEXT 4] Predicted next UID\r\nA2 OK [READ-ONLY] Examine completed.\r\n"
    )
    assert imap_filter.from_server(select_answer) == select_answer.replace(
        b"* OK [UIDNEXT 4] Predicted next UID\r\n", b""
    )
    status = b"* STATUS INBOX (UIDNEXT 4)\r\nA3 OK Status completed.\r\n"
    assert imap_filter.from_server(status) == status
    assert imap_filter.hidden == {"uidnext": 1}


def test_status_commands_are_renamed_and_nothing_else_is():
    imap_filter = ImapFilter(refuse_status=True)
    assert imap_filter.from_client(b'A5 STATUS "INBOX" (UIDNEXT)\r\n') == (
        b'A5 XSTATUS-REFUSED-BY-PROXY "INBOX" (UIDNEXT)\r\n'
    )
    # A STATUS inside a literal is data, not a command.
    append = b"A6 APPEND INBOX {17}\r\nA9 STATUS INBOX\r\n"
    assert imap_filter.from_client(append) == append
    assert imap_filter.from_client(b"\r\nA7 NOOP\r\n") == b"\r\nA7 NOOP\r\n"
    assert imap_filter.hidden == {"status": 1}


# -- the proxy in front of Dovecot -----------------------------------------------------


@pytest.fixture
def dovecot_server() -> Iterator[DovecotServer]:
    require_dovecot()
    with DovecotServer() as server:
        yield server


def client_of(proxy: QuietImapProxy) -> IMAPClient:
    client = IMAPClient(proxy.host, proxy.port, ssl=False, timeout=10)
    client.login(USER, PASSWORD)
    return client


def message(subject: str) -> bytes:
    return (
        f"From: a@supplier.example\r\nSubject: {subject}\r\n"
        f"Message-ID: <{uuid.uuid4().hex}@supplier.example>\r\n\r\nbody\r\n"
    ).encode()


def test_through_the_proxy_an_idling_client_hears_nothing_of_new_mail(dovecot_server):
    append = (dovecot_server.host, dovecot_server.port, USER, PASSWORD)
    with QuietImapProxy(append[:2], hide_idle_news=True) as proxy, client_of(proxy) as client:
        client.select_folder("INBOX", readonly=True)
        client.idle()
        uid = append_message(*append, message("unheard"))
        # Dovecot announces it within half a second; the proxy hides the announcement.
        wait_until(lambda: proxy.hidden("exists") >= 1, 20, "Dovecot's EXISTS hidden")
        assert select.select([client.socket()], [], [], 0)[0] == []
        _text, responses = client.idle_done()
        assert not [r for r in responses if b"EXISTS" in r]
        # Never told, the client finds the message by searching.
        assert client.search(["ALL"]) == [uid]


def test_through_the_proxy_select_has_no_uidnext_and_status_can_be_refused(dovecot_server):
    target = (dovecot_server.host, dovecot_server.port)
    append_message(*target, USER, PASSWORD, message("old"))
    with QuietImapProxy(target, hide_uidnext=True) as proxy, client_of(proxy) as client:
        info = client.select_folder("INBOX", readonly=True)
        assert b"UIDNEXT" not in info and info[b"EXISTS"] == 1
        assert client.folder_status("INBOX", ["UIDNEXT"]) == {b"UIDNEXT": 2}
        assert proxy.hidden("uidnext") == 1
    with QuietImapProxy(target, refuse_status=True) as proxy, client_of(proxy) as client:
        with pytest.raises(IMAPClientError):
            client.folder_status("INBOX", ["UIDNEXT"])
        assert client.noop()  # the connection goes on
        assert proxy.hidden("status") == 1
