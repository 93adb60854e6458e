"""Notifications and trusted senders: a subscription with reply_to_sender writes to the
From address of the message an import came from, so only a message that was imported
is ever answered."""

from __future__ import annotations

import pytest

from devkit.samples import supplier_email
from mailboxes.models import InboundMessage
from notifications.models import Notification, Subscription
from pricefeed.intake import message_process
from pricefeed.models import PriceListConfig
from tests.factories import create_config, create_message, deliver_everything, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

MX = "mx.buyer.test"
PRICES = [("p.csv", b"sku;price\nA-1;1\n")]


def arrive(mailbox, authentication_results: str, subject: str) -> InboundMessage:
    """A message from sales@acme.test as the receiving server stored it (its
    Authentication-Results on top), matched and its imports run."""
    raw = f"Authentication-Results: {authentication_results}\r\n".encode() + supplier_email(
        subject=subject, attachments=PRICES
    )
    message = create_message(mailbox, raw, subject=subject, from_address="sales@acme.test")
    message_process(message_id=message.pk, worker="w")
    message.refresh_from_db()
    run_all(message)
    return message


def test_a_sender_failing_a_required_check_gets_no_import_and_no_mail(
    mailbox, settings, mailoutbox
):
    settings.PRICEFEED_AUTHSERV_IDS = [MX]
    create_config(mailbox, sender_auth=PriceListConfig.SenderAuth.REQUIRE)
    Subscription.objects.create(reply_to_sender=True)

    spoofed = arrive(mailbox, f"{MX}; dmarc=fail header.from=acme.test", "spoofed")
    genuine = arrive(mailbox, f"{MX}; dmarc=pass header.from=acme.test", "genuine")
    deliver_everything()

    assert spoofed.status == InboundMessage.Status.IGNORED
    assert not spoofed.imports.exists()
    (notification,) = Notification.objects.all()
    assert notification.price_import.message_id == genuine.pk
    assert [m.to for m in mailoutbox] == [["sales@acme.test"]]


def test_with_record_an_unauthenticated_from_address_is_still_written_to(
    mailbox, settings, mailoutbox
):
    # The decision documented in README (trusted senders): with "record" the import
    # happens, and the From address it is about hears of it, as before the check existed.
    # That address is the one the config's sender pattern accepts (the supplier's own),
    # never a Reply-To, so a forger is not the one who reads the answer.
    settings.PRICEFEED_AUTHSERV_IDS = [MX]
    create_config(mailbox, sender_auth=PriceListConfig.SenderAuth.RECORD)
    Subscription.objects.create(reply_to_sender=True)

    message = arrive(mailbox, f"{MX}; dmarc=fail header.from=acme.test", "unchecked")
    deliver_everything()

    assert message.status == InboundMessage.Status.DONE
    assert message.match_report["sender_auth"]["authenticated"] is False
    assert [m.to for m in mailoutbox] == [["sales@acme.test"]]
