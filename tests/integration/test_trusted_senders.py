"""Trusted senders end to end: Dovecot → listen_mail → qcluster → dispatch_outbox, with
PRICEFEED_AUTHSERV_IDS naming the receiving server and a config that requires an
authenticated sender. Only the message the receiving server's own
Authentication-Results vouch for is imported and answered."""

from __future__ import annotations

from mailboxes.models import InboundMessage
from notifications.models import Notification, Subscription
from pricefeed.models import PriceImport, PriceListConfig
from tests.factories import english

from .support import price_email, wait_until

Status = InboundMessage.Status
MX = "mx.buyer.test"
ENV = {"PRICEFEED_AUTHSERV_IDS": MX}


def received(subject: str, *authentication_results: str) -> bytes:
    """A message from sales@acme.test as the receiving server stored it: its
    Authentication-Results fields on top, in the order given (topmost first)."""
    added = "".join(f"Authentication-Results: {value}\n" for value in authentication_results)
    return added.encode() + price_email(sender="Sales <sales@acme.test>", subject=subject)


def test_only_the_sender_the_receiving_server_authenticated_is_imported_and_answered(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox, sender_auth=PriceListConfig.SenderAuth.REQUIRE)
    Subscription.objects.create(reply_to_sender=True)
    listener = manage("listen_mail", env=ENV)
    manage("qcluster", env=ENV)
    manage("dispatch_outbox", env=ENV)

    dovecot.append(
        received(
            "genuine",
            f"{MX};\n\tdkim=pass header.d=acme.test header.s=mail;\n"
            "\tdmarc=pass (p=reject dis=none) header.from=acme.test",
        )
    )
    dovecot.append(
        received("spoofed", f"{MX}; spf=fail; dmarc=fail (p=none) header.from=acme.test")
    )
    dovecot.append(received("unchecked", "mx.acme.test; dmarc=pass header.from=acme.test"))
    dovecot.append(
        received(
            "forged above",
            "evil.test; dmarc=pass header.from=acme.test",
            f"{MX}; dmarc=fail header.from=acme.test",
        )
    )

    def settled() -> bool:
        return (
            InboundMessage.objects.filter(status__in=[Status.DONE, Status.IGNORED]).count() == 4
            and PriceImport.objects.filter(status=PriceImport.Status.SUCCEEDED).exists()
            and Notification.objects.exists()
        )

    wait_until(settled, 60, "four messages settled, one import announced", on_timeout=listener.log)
    by_subject = {m.subject: m for m in InboundMessage.objects.all()}

    genuine = by_subject["genuine"]
    assert genuine.status == Status.DONE
    (price_import,) = PriceImport.objects.all()
    assert price_import.message_id == genuine.pk
    (config,) = genuine.match_report["configs"]
    assert english(config["reasons"]) == [
        "matched 1 file(s)",
        f"sender authenticated: dmarc=pass for acme.test (Authentication-Results from {MX})",
    ]

    why = {
        "spoofed": "dmarc=fail header.from=acme.test, dkim=none"
        f" (Authentication-Results from {MX})",
        "unchecked": f"no Authentication-Results from {MX}",
        "forged above": "dmarc=fail header.from=acme.test, dkim=none"
        f" (Authentication-Results from {MX})",
    }
    for subject, reason in why.items():
        message = by_subject[subject]
        assert message.status == Status.IGNORED, subject
        (config,) = message.match_report["configs"]
        assert english(config["reasons"]) == [f"sender not authenticated: {reason}"], subject
        assert message.match_report["sender_auth"]["authenticated"] is False

    # Nothing was imported from the spoofed ones, so their From address hears nothing.
    (notification,) = Notification.objects.select_related("price_import")
    assert notification.recipient == "sales@acme.test"
    assert notification.price_import.message_id == genuine.pk


def test_a_from_whose_comment_or_name_holds_the_supplier_never_passes_for_it(
    dovecot, make_mailbox, make_config, manage
):
    """Issue #30: the sender's address came out of a comment or a quoted display name, and
    a dmarc=pass naming no header.from passed under ``require``. Each forgery here carries
    the receiving server's dmarc=pass as the MTA would write it for the attacker's own
    domain (or with no header.from at all); none imports."""
    mailbox = make_mailbox(dovecot)
    make_config(mailbox, sender_auth=PriceListConfig.SenderAuth.REQUIRE)
    listener = manage("listen_mail", env=ENV)
    manage("qcluster", env=ENV)

    def forged(subject: str, sender: str, results: str) -> bytes:
        added = f"Authentication-Results: {MX}; {results}\n".encode()
        return added + price_email(sender=sender, subject=subject)

    dovecot.append(
        forged(
            "comment",
            "attacker@evil.example (<sales@acme.test>)",
            "dmarc=pass header.from=evil.example",
        )
    )
    dovecot.append(
        forged(
            "display name",
            '"sales@acme.test" <attacker@evil.example>',
            "dmarc=pass header.from=evil.example",
        )
    )
    dovecot.append(forged("no header.from", "Sales <sales@acme.test>", "dmarc=pass"))

    wait_until(
        lambda: InboundMessage.objects.filter(status=Status.IGNORED).count() == 3,
        60,
        "three forged messages IGNORED",
        on_timeout=listener.log,
    )
    by_subject = {m.subject: m for m in InboundMessage.objects.all()}
    assert not PriceImport.objects.exists()
    for subject in ("comment", "display name"):
        message = by_subject[subject]
        assert message.from_address == "attacker@evil.example", subject
        assert english(message.warnings) == [
            "the From field's display name or a comment shows the address sales@acme.test,"
            " but the message is from attacker@evil.example"
        ], subject
        assert message.match_report["sender_auth"]["from_domain"] == "evil.example"
    unnamed = by_subject["no header.from"]
    assert unnamed.from_address == "sales@acme.test"
    assert unnamed.match_report["sender_auth"]["authenticated"] is False
    (config,) = unnamed.match_report["configs"]
    assert english(config["reasons"]) == [
        "sender not authenticated: dmarc=pass, dkim=none; nothing aligned with acme.test"
        f" passed (Authentication-Results from {MX})"
    ]
