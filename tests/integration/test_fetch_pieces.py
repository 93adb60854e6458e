"""Large messages are fetched in pieces, byte for byte the same as in one FETCH, on
Dovecot and on pymap."""

from __future__ import annotations

import base64
import random

import pytest

from mailboxes import imap
from mailboxes.imap import ConnectionSettings, ImapSession

pytestmark = pytest.mark.django_db


def large_message(size: int) -> bytes:
    data = random.Random(7).randbytes(size * 3 // 4)
    return (
        b"From: prices@supplier.ru\r\nSubject: big\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(data).replace(b"\n", b"\r\n")
    )


@pytest.mark.parametrize("size", [3 * 2**20, 3 * 2**20 + 12_345])
def test_a_message_fetched_in_pieces_is_the_message_fetched_whole(imap_server, monkeypatch, size):
    monkeypatch.setattr(imap, "PIECE_BYTES", 2**20)  # several pieces, the last one short
    raw = large_message(size)
    imap_server.append(raw)
    conn = ConnectionSettings(
        host=imap_server.host,
        port=imap_server.port,
        security="plain",
        username=imap_server.user,
        password=imap_server.password,
    )
    with ImapSession(conn) as session:
        session.open()
        (uid,) = session.uids_after(0)
        sizes = session.sizes([uid])
        assert sizes[uid] > imap.PIECE_BYTES

        in_pieces = session.bodies([uid], sizes)
        whole = session.bodies([uid])

    assert in_pieces[uid] == whole[uid] == raw


def test_reading_in_pieces_stops_once_past_the_limit(dovecot, monkeypatch):
    monkeypatch.setattr(imap, "PIECE_BYTES", 2**20)
    raw = large_message(5 * 2**20)
    dovecot.append(raw)
    conn = ConnectionSettings(
        host=dovecot.host,
        port=dovecot.port,
        security="plain",
        username="pricefeed",
        password="secret",
    )
    with ImapSession(conn) as session:
        session.open()
        (uid,) = session.uids_after(0)

        body = session.bodies([uid], {uid: len(raw)}, limit=2 * 2**20)[uid]

    # Pieces until the limit is passed (three of 1 MiB), then no more: the caller
    # refuses the message.
    assert len(body) == 3 * 2**20
    assert raw.startswith(body)
