"""mailboxes.imap: its pure parts, and a connection check against a closed port."""

from __future__ import annotations

import socket
import ssl

import pytest
from imapclient.exceptions import LoginError

from devkit.servers import free_port
from mailboxes.imap import (
    ConnectionSettings,
    ImapError,
    batches,
    check_connection,
    describe_error,
)

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


# -- ConnectionSettings -----------------------------------------------------------------------


def test_connection_settings_repr_never_contains_the_password():
    text = repr(SETTINGS)

    assert SECRET not in text
    assert SECRET not in str(SETTINGS)
    assert SECRET not in f"{SETTINGS!r} {SETTINGS}"
    assert text == "ConnectionSettings(ssl://buyer@imap.supplier.example:993/INBOX)"


def test_connection_settings_inside_a_container_repr_hides_the_password():
    assert SECRET not in repr({"settings": [SETTINGS]})
