"""Integration tests of the throwaway IMAP servers in :mod:`devkit.servers`.

They start real servers on free ports of 127.0.0.1 and need no database.
"""

from __future__ import annotations

import select
import time
import uuid
from collections.abc import Iterator

import pytest
from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from devkit.servers import ImapAppender, append_message
from devkit.servers.dovecot import DovecotServer
from devkit.servers.pymap import PymapServer

USER = "pricefeed"
PASSWORD = "secret"
CLIENT_TIMEOUT = 10
IDLE_TIMEOUT = 5.0

needs_dovecot = pytest.mark.skipif(
    not DovecotServer.available(), reason="dovecot and doveadm are not installed"
)


def price_list(subject: str) -> bytes:
    """Returns a small RFC 5322 message with the given subject."""
    return (
        "From: Supplier <prices@supplier.example>\r\n"
        "To: Buyer <buyer@pricefeed.example>\r\n"
        f"Subject: {subject}\r\n"
        f"Message-ID: <{uuid.uuid4().hex}@supplier.example>\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        "SKU-1;9.99\r\n"
    ).encode()


def login(host: str, port: int, user: str = USER, password: str = PASSWORD) -> IMAPClient:
    """Returns a logged-in client; use it in a ``with`` block so that it is closed."""
    client = IMAPClient(host, port, ssl=False, timeout=CLIENT_TIMEOUT)
    try:
        client.login(user, password)
    except BaseException:
        client.shutdown()
        raise
    return client


def wait_for_push(client: IMAPClient, timeout: float = IDLE_TIMEOUT) -> list[tuple[object, ...]]:
    """Waits until the server pushes a response during IDLE; ends IDLE and returns them all.

    imapclient's ``idle_check`` reads the socket non-blocking and fails on a response line
    that arrives in two TCP segments (imapclient issue #519), which pymap produces. So this
    waits for the socket to become readable and lets ``idle_done`` (a blocking read up to the
    tagged reply) collect the untagged responses.
    """
    readable, _, _ = select.select([client.socket()], [], [], timeout)
    assert readable, f"the server pushed nothing in IDLE within {timeout} s"
    _, responses = client.idle_done()
    return list(responses)


def exists_count(responses: list[tuple[object, ...]]) -> int | None:
    """Returns the message count of the last EXISTS response, if there is one."""
    counts = [r[0] for r in responses if len(r) > 1 and r[1] == b"EXISTS" and isinstance(r[0], int)]
    return counts[-1] if counts else None


def assert_append_search_fetch(host: str, port: int) -> None:
    """Appends two messages and finds and fetches them again."""
    subject = f"Price list {uuid.uuid4().hex[:8]}"
    first = price_list(subject)
    first_uid = append_message(host, port, USER, PASSWORD, first)
    with ImapAppender(host, port, USER, PASSWORD) as appender:
        second_uid = appender.append(price_list("Something else"))
    assert 0 < first_uid < second_uid

    with login(host, port) as client:
        client.select_folder("INBOX", readonly=True)
        assert client.search(["SUBJECT", subject]) == [first_uid]
        fetched = client.fetch([first_uid], ["BODY.PEEK[]"])
        assert fetched[first_uid][b"BODY[]"] == first
        # BODY.PEEK must not have marked the message as read.
        assert b"\\Seen" not in client.get_flags([first_uid])[first_uid]


# -- Dovecot ------------------------------------------------------------------------------


@pytest.fixture
def dovecot_server() -> Iterator[DovecotServer]:
    """Yields a running private Dovecot and removes it afterwards."""
    with DovecotServer() as server:
        yield server


@needs_dovecot
def test_dovecot_append_search_and_fetch(dovecot_server: DovecotServer) -> None:
    assert_append_search_fetch(dovecot_server.host, dovecot_server.port)


@needs_dovecot
def test_dovecot_idle_client_is_told_of_delivered_message(dovecot_server: DovecotServer) -> None:
    with login(dovecot_server.host, dovecot_server.port) as client:
        client.select_folder("INBOX")
        client.idle()
        dovecot_server.deliver(USER, price_list("Pushed"))
        assert exists_count(wait_for_push(client)) == 1
        assert len(client.search(["SUBJECT", "Pushed"])) == 1


@needs_dovecot
def test_dovecot_message_delivered_while_killed_is_there_after_restart(
    dovecot_server: DovecotServer,
) -> None:
    append_message(
        dovecot_server.host, dovecot_server.port, USER, PASSWORD, price_list("Before the crash")
    )
    port = dovecot_server.port

    dovecot_server.kill()
    assert not dovecot_server.running
    with pytest.raises(ConnectionRefusedError):
        login(dovecot_server.host, dovecot_server.port)
    dovecot_server.deliver(USER, price_list("While down"))
    dovecot_server.restart()

    assert dovecot_server.port == port
    with login(dovecot_server.host, dovecot_server.port) as client:
        client.select_folder("INBOX", readonly=True)
        assert len(client.search(["SUBJECT", "Before the crash"])) == 1
        assert len(client.search(["SUBJECT", "While down"])) == 1


@needs_dovecot
def test_dovecot_kill_drops_connected_clients(dovecot_server: DovecotServer) -> None:
    with login(dovecot_server.host, dovecot_server.port) as client:
        client.select_folder("INBOX")
        dovecot_server.kill()
        with pytest.raises((OSError, IMAPClient.AbortError)):
            client.noop()


@needs_dovecot
def test_dovecot_set_uidvalidity_changes_what_select_reports(dovecot_server: DovecotServer) -> None:
    with login(dovecot_server.host, dovecot_server.port) as client:
        before = client.select_folder("INBOX")[b"UIDVALIDITY"]
    assert dovecot_server.uidvalidity(USER) == before

    dovecot_server.set_uidvalidity(USER, before + 1000)

    assert dovecot_server.uidvalidity(USER) == before + 1000
    with login(dovecot_server.host, dovecot_server.port) as client:
        assert client.select_folder("INBOX")[b"UIDVALIDITY"] == before + 1000


@needs_dovecot
def test_dovecot_wrong_password_fails_fast_and_does_not_slow_later_logins(
    dovecot_server: DovecotServer,
) -> None:
    started = time.monotonic()
    with pytest.raises(LoginError):
        login(dovecot_server.host, dovecot_server.port, password="wrong")
    assert time.monotonic() - started < 2.0

    # Dovecot's auth penalty would delay the next login from 127.0.0.1 by 2 s.
    started = time.monotonic()
    with login(dovecot_server.host, dovecot_server.port):
        pass
    assert time.monotonic() - started < 1.0


@needs_dovecot
def test_dovecot_add_user_and_create_folder_while_running(dovecot_server: DovecotServer) -> None:
    dovecot_server.add_user("second", "other-secret")
    dovecot_server.create_folder("second", "Prices")
    dovecot_server.deliver("second", price_list("Filed"), folder="Prices")

    with login(dovecot_server.host, dovecot_server.port, "second", "other-secret") as client:
        assert client.folder_exists("Prices")
        client.select_folder("Prices", readonly=True)
        assert len(client.search(["SUBJECT", "Filed"])) == 1


# -- pymap --------------------------------------------------------------------------------


@pytest.fixture
def pymap() -> Iterator[PymapServer]:
    """Yields a running pymap server and stops it afterwards."""
    with PymapServer(USER, PASSWORD) as server:
        yield server


def test_pymap_append_search_and_fetch(pymap: PymapServer) -> None:
    assert_append_search_fetch(pymap.host, pymap.port)


def test_pymap_takes_a_password_that_begins_with_a_dash() -> None:
    # The demo's password is secrets.token_urlsafe(12): one time in 64 it begins with "-",
    # and pymap's argparse took such a value for an option and did not start.
    with PymapServer(USER, "-Ab3_x") as server, login(server.host, server.port, USER, "-Ab3_x"):
        pass


def test_pymap_idle_client_is_told_of_appended_message(pymap: PymapServer) -> None:
    with (
        login(pymap.host, pymap.port) as watcher,
        ImapAppender(pymap.host, pymap.port, USER, PASSWORD) as appender,
    ):
        watcher.select_folder("INBOX")
        watcher.idle()
        uid = appender.append(price_list("Pushed"))
        assert exists_count(wait_for_push(watcher)) == 1
        assert watcher.search(["SUBJECT", "Pushed"]) == [uid]
