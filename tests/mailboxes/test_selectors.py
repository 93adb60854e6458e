"""mailboxes.selectors: what other apps read of inbound mail."""

from __future__ import annotations

import pytest

from mailboxes.exceptions import RawMessageMissing
from mailboxes.selectors import message_raw
from tests.factories import price_mail

pytestmark = pytest.mark.django_db


def test_message_raw_gives_the_stored_bytes_exactly(make_message):
    raw = price_mail([("прайс.xlsx", bytes(range(256)))]) + b"\r\n\x00trailing\xff"
    message = make_message(raw)

    assert message_raw(message.pk) == raw


def test_message_raw_of_a_message_refused_unread_raises_raw_message_missing(make_message):
    message = make_message(None)

    with pytest.raises(RawMessageMissing):
        message_raw(message.pk)
