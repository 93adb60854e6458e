"""End to end on one instance: IMAP server → listen_mail → InboundMessage → qcluster."""

from __future__ import annotations

import random
import time
from decimal import Decimal

from mailboxes.models import InboundMessage
from pricefeed.models import PriceImport, PriceItem
from tests.factories import english

from .support import mailbox_line, price_email, wait_until

Status = InboundMessage.Status


def _statuses():
    return list(InboundMessage.objects.order_by("uid").values_list("uid", "status"))


def test_three_messages_in_one_window_make_three_imports(
    imap_server, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(imap_server)
    make_config(mailbox)
    listener = manage("listen_mail")
    manage("qcluster")
    listener.wait_for_log(mailbox_line("prices", "listening token="))
    # Let the listener reach IDLE, then append three messages back to back: they land
    # between two wake-ups.
    listener.wait_for_log(r"lease acquired")
    wait_until(lambda: mailbox.checkpoints.exists(), 10, "checkpoint created")
    uids = [imap_server.append(price_email(subject=f"Prices {i}")) for i in range(3)]

    wait_until(
        lambda: InboundMessage.objects.filter(status=Status.DONE).count() == 3,
        30,
        "three DONE messages",
        on_timeout=listener.log,
    )
    records = list(InboundMessage.objects.order_by("pk"))
    assert [r.subject for r in records] == ["Prices 0", "Prices 1", "Prices 2"]
    assert [r.uid for r in records] == sorted(r.uid for r in records)
    if all(uids):
        assert [r.uid for r in records] == uids
    # Workers process in parallel, so imports are created in any order; each belongs to
    # exactly one message, and ordered by message they follow the UIDs.
    imports = list(PriceImport.objects.order_by("message__uid").select_related("message"))
    assert len(imports) == 3
    assert [i.message_id for i in imports] == [r.pk for r in records]
    # The workers go on to parse each attachment into price rows.
    wait_until(
        lambda: PriceImport.objects.filter(status=PriceImport.Status.SUCCEEDED).count() == 3,
        30,
        "three imports SUCCEEDED",
    )
    assert (
        sorted(PriceItem.objects.values_list("sku", "price"))
        == [
            ("A-1", Decimal("10.5")),
        ]
        * 3
    )
    assert mailbox.checkpoints.get().last_uid == records[-1].uid


def test_two_attachments_matching_two_configs_make_two_imports(
    imap_server, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(imap_server)
    prices = make_config(mailbox, "prices", filename_pattern="price*.csv")
    stock = make_config(mailbox, "stock", filename_pattern="stock*.csv")
    other = make_config(mailbox, "other supplier", sender_pattern="*@other.test")
    manage("listen_mail")
    manage("qcluster")
    imap_server.append(
        price_email(
            attachments=[("price_2026.csv", b"sku;price\n1;2\n"), ("stock_2026.csv", b"sku;qty\n")]
        )
    )
    message = wait_until(
        lambda: InboundMessage.objects.filter(status=Status.DONE).first(), 30, "DONE message"
    )
    imports = {(i.config_id, i.filename) for i in message.imports.all()}
    assert imports == {(prices.pk, "price_2026.csv"), (stock.pk, "stock_2026.csv")}
    verdicts = {c["name"]: c["matched"] for c in message.match_report["configs"]}
    assert verdicts == {"prices": True, "stock": True, "other supplier": False}
    assert other.imports.count() == 0


def test_message_matching_nothing_is_ignored_with_a_reason_per_config(
    imap_server, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(imap_server)
    make_config(mailbox, "acme csv")
    make_config(mailbox, "beta", sender_pattern="*@beta.test", subject_pattern="re:прайс")
    manage("listen_mail")
    manage("qcluster")
    imap_server.append(
        price_email(
            sender="news@spam.test", subject="Weekly news", attachments=[("flyer.pdf", b"%PDF")]
        )
    )
    message = wait_until(
        lambda: InboundMessage.objects.filter(status=Status.IGNORED).first(), 30, "IGNORED"
    )
    assert message.imports.count() == 0
    report = {c["name"]: c for c in message.match_report["configs"]}
    assert set(report) == {"acme csv", "beta"}
    assert not report["acme csv"]["matched"]
    acme_why = " ".join(english(report["acme csv"]["reasons"]))
    assert "sender 'news@spam.test' does not match '*@acme.test'" in acme_why
    assert "flyer.pdf" in acme_why
    beta_why = " ".join(english(report["beta"]["reasons"]))
    assert "subject 'Weekly news' does not match 're:прайс'" in beta_why


def test_receiving_never_changes_the_mailbox(dovecot, make_mailbox, make_config, manage):
    from imapclient import IMAPClient

    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    manage("listen_mail")
    dovecot.append(price_email())
    wait_until(lambda: InboundMessage.objects.exists(), 20, "recorded")
    client = IMAPClient(dovecot.host, dovecot.port, ssl=False, timeout=10)
    client.login(dovecot.user, dovecot.password)
    client.select_folder("INBOX", readonly=True)
    flags = client.get_flags(client.search("ALL"))
    client.logout()
    assert len(flags) == 1
    assert b"\\Seen" not in next(iter(flags.values()))


def test_a_steady_trickle_of_messages_is_each_recorded_without_waiting_for_a_wake_up(
    dovecot, make_mailbox, make_config, manage
):
    # Each message is appended right after the previous one was recorded, so it lands
    # while the listener is between commands. A server announces a message once per
    # session; when the announcement rides on a SEARCH or FETCH response the listener
    # must search again rather than idle, or the message waits for the next wake-up:
    # Dovecot's "still here" after 2 minutes, or the IDLE refresh. The bound below is a
    # liveness bound far above Dovecot's 0.5 s push delay, not a speed target.
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    listener = manage("listen_mail")
    wait_until(lambda: mailbox.checkpoints.exists(), 10, "listening")
    jitter = random.Random(7)
    for i in range(60):
        # Spread the arrivals over the listener's NOOP/SEARCH/FETCH round trips.
        time.sleep(jitter.uniform(0, 0.008))
        dovecot.append(price_email(subject=f"trickle {i}", message_id=f"<t{i}@acme.test>"))
        wait_until(
            lambda i=i: InboundMessage.objects.filter(message_id=f"<t{i}@acme.test>").exists(),
            60,
            f"message {i} recorded",
            interval=0.002,
            on_timeout=listener.log,
        )


def test_a_mailbox_is_listened_to_from_its_first_enabled_config_so_its_backlog_is_not_ignored(
    dovecot, make_mailbox, make_config, manage
):
    from imapclient import IMAPClient

    client = IMAPClient(dovecot.host, dovecot.port, ssl=False, timeout=10)
    client.login(dovecot.user, dovecot.password)
    client.create_folder("Other")
    client.logout()
    # Saved before its configs, with mail already in it (backfill: all messages).
    early = make_mailbox(dovecot, "early")
    dovecot.append(price_email(subject="Waiting since before any config"))
    # Another mailbox of the same instance, with its config: once its mail is in, the
    # supervisor has weighed both.
    other = make_mailbox(dovecot, "other", folder="Other")
    make_config(other, "other's")
    dovecot.append(price_email(subject="Other"), folder="Other")
    listener = manage("listen_mail")
    manage("qcluster")

    wait_until(
        lambda: InboundMessage.objects.filter(mailbox=other, status=Status.DONE).exists(),
        30,
        "the other mailbox's message DONE",
        on_timeout=listener.log,
    )
    assert not InboundMessage.objects.filter(mailbox=early).exists()
    assert not early.checkpoints.exists()
    assert listener.count(mailbox_line("early", "listening token=")) == 0

    make_config(early, "early's")  # reaches the running listener (LISTEN/NOTIFY)
    message = wait_until(
        lambda: InboundMessage.objects.filter(mailbox=early, status=Status.DONE).first(),
        30,
        "the early mailbox's backlog DONE",
        on_timeout=listener.log,
    )
    assert message.subject == "Waiting since before any config"
    assert message.imports.get().config.name == "early's"
    assert not InboundMessage.objects.filter(status=Status.IGNORED).exists()
