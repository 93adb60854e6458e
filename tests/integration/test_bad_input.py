"""Bad input ends in a visible state with its reason, and the listener keeps going."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from mailboxes.models import InboundMessage
from tests.factories import english

from .support import mailbox_line, price_email, wait_until

Status = InboundMessage.Status

NO_BOUNDARY = (
    b"From: sales@acme.test\r\nTo: prices@buyer.test\r\nSubject: no boundary\r\n"
    b"Message-ID: <no-boundary@acme.test>\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: multipart/mixed\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n"
)
NO_BLANK_LINE = (
    b"From: sales@acme.test\r\nTo: prices@buyer.test\r\nSubject: no blank line\r\n"
    b"Message-ID: <no-blank@acme.test>\r\n"
    b"this line should have been the body\r\nprice.csv attached\r\n"
)


def test_bad_messages_each_end_in_a_visible_state_and_the_listener_keeps_running(
    imap_server, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(imap_server)
    make_config(mailbox)
    listener = manage("listen_mail", env={"PRICEFEED_MAX_MESSAGE_BYTES": "20000"})
    manage("qcluster")
    imap_server.append(price_email(subject="no id", message_id=None))
    # The same Message-ID and Date (the dedup key holds both): built a second apart, the
    # copies' Date fields differed and both were recorded (seen once in CI).
    sent = datetime.now(UTC)
    imap_server.append(price_email(subject="first copy", message_id="<same@acme.test>", date=sent))
    imap_server.append(
        price_email(
            subject="second copy",
            message_id="<same@acme.test>",
            date=sent,
            attachments=[("price.csv", b"sku;price\nB-2;99\n")],
        )
    )
    imap_server.append(NO_BOUNDARY)
    imap_server.append(NO_BLANK_LINE)
    imap_server.append(price_email(subject="too big", attachments=[("price.csv", b"x" * 50_000)]))
    imap_server.append(price_email(subject="good after bad"))

    def settled():
        return (
            InboundMessage.objects.count() == 7
            and not InboundMessage.objects.filter(
                status__in=[Status.RECEIVED, Status.PROCESSING]
            ).exists()
        )

    wait_until(settled, 40, "all seven messages settled", on_timeout=listener.log)
    by_subject = {m.subject: m for m in InboundMessage.objects.all()}

    no_id = by_subject["no id"]
    assert no_id.status == Status.DONE
    assert no_id.message_id == ""
    assert any("no Message-ID" in w for w in english(no_id.warnings))

    assert by_subject["first copy"].status == Status.DONE
    second = by_subject["second copy"]
    assert second.status == Status.REJECTED
    assert "<same@acme.test>" in second.last_error
    assert "different content" in second.last_error
    assert bytes(second.raw) != bytes(by_subject["first copy"].raw)  # kept for inspection

    for subject in ("no boundary", "no blank line"):
        broken = by_subject[subject]
        assert broken.status == Status.REJECTED, subject
        assert broken.last_error.startswith("malformed MIME"), broken.last_error

    too_big = by_subject["too big"]
    assert too_big.status == Status.REJECTED
    assert "over the limit of 20,000 bytes" in too_big.last_error
    assert too_big.raw is None
    assert too_big.size > 20000

    assert by_subject["good after bad"].status == Status.DONE
    assert listener.alive


def test_wrong_password_and_unreachable_host_back_off_and_leave_other_mailboxes_alone(
    dovecot, make_mailbox, make_config, manage
):
    from devkit.servers import free_port

    good = make_mailbox(dovecot, "good")
    make_config(good)
    # Each with a config: a mailbox without one is not listened to.
    make_config(make_mailbox(dovecot, "wrong password", password="not-the-password"))
    make_config(make_mailbox(dovecot, "unreachable", port=free_port()))
    listener = manage(
        "listen_mail",
        env={"PRICEFEED_IMAP_BACKOFF_BASE": "0.5", "PRICEFEED_IMAP_BACKOFF_MAX": "2"},
    )
    dovecot.append(price_email(subject="still flowing"))
    wait_until(lambda: InboundMessage.objects.filter(mailbox=good).exists(), 20, "good mailbox")

    retries = mailbox_line("unreachable", "; retry ")
    wait_until(lambda: listener.count(retries) >= 3, 20, "three retries")
    log = listener.log()
    # One clear ERROR line per problem; the repeats are INFO, never tracebacks.
    assert log.count("ERROR mailboxes.listener") == 2, log
    assert re.search(
        mailbox_line("wrong password", "authentication failed for user 'pricefeed'; retry 1 in"),
        log,
    )
    assert re.search(mailbox_line("unreachable", r"connection to 127\.0\.0\.1:\d+ refused"), log)
    assert "refused" in log
    assert "Traceback" not in log
    # Backoff, not hammering: with delays of 1-2 s by now, three more seconds bring a
    # handful of attempts at most (a retry loop without backoff would log hundreds).
    before = listener.count(retries)
    time.sleep(3)
    assert listener.count(retries) - before <= 6

    from mailboxes.models import Mailbox

    errors = dict(Mailbox.objects.values_list("name", "last_error"))
    assert errors["good"] == ""
    assert "authentication failed" in errors["wrong password"]
    assert "refused" in errors["unreachable"]
    assert Mailbox.objects.get(name="wrong password").last_error_at is not None
