"""Fixtures shared by the mailboxes unit tests: a mailbox, raw messages, records."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest

from mailboxes import services
from mailboxes.models import InboundMessage, Mailbox

from .factories import price_mail

# Marks "no raw given" apart from raw=None (a message refused unread).
DEFAULT_RAW: Any = object()


@pytest.fixture
def mailbox(db) -> Mailbox:
    return Mailbox.objects.create(
        name="Поставщик",
        host="imap.supplier.example",
        port=993,
        security=Mailbox.Security.SSL,
        username="buyer",
        password="s3cret-imap-password",
    )


@pytest.fixture
def make_message(mailbox):
    """Creates an InboundMessage row directly (bypassing recording) in a given status."""
    uids = iter(range(1, 10_000))

    def make(
        raw: bytes | None = DEFAULT_RAW,
        *,
        status: str = InboundMessage.Status.RECEIVED,
        **fields: object,
    ) -> InboundMessage:
        raw = price_mail() if raw is DEFAULT_RAW else raw
        values = {
            "mailbox": mailbox,
            "folder": "INBOX",
            "uidvalidity": 1,
            "uid": next(uids),
            "subject": "Прайс-лист на июнь",
            "from_address": "prices@supplier.ru",
            "message_id": f"<{uuid.uuid4().hex}@supplier.ru>",
            "raw": raw,
            "size": len(raw or b""),
            "sha256": hashlib.sha256(raw).hexdigest() if raw is not None else "",
            "dedup_key": uuid.uuid4().hex,
            "status": status,
        }
        values.update(fields)
        return InboundMessage.objects.create(**values)

    return make


@pytest.fixture
def enqueued(monkeypatch) -> list[int]:
    """Collects the message ids handed to django-q2 instead of enqueueing them."""
    calls: list[int] = []
    monkeypatch.setattr(services, "enqueue_processing", lambda ids: calls.extend(ids))
    return calls
