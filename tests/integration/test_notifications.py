"""From an e-mail in the mailbox to a notification in an SMTP server: the whole flow."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from tests.notifications.test_admin_trouble import cells

from .support import price_email, received, wait_until


# Dovecot -> listen_mail -> qcluster -> dispatch_outbox -> SMTP, real processes throughout:
# the path CI runs on the lowest supported Python as well (.ci/run).
@pytest.mark.e2e
def test_an_imported_price_list_is_announced_once_to_each_subscriber(
    dovecot, make_mailbox, make_config, manage, smtp_sink
):
    port, path = smtp_sink
    mailbox = make_mailbox(dovecot)
    config = make_config(mailbox)
    ops = Subscription.objects.create(email="ops@buyer.test", language="en")
    ops.configs.add(config)
    Subscription.objects.create(reply_to_sender=True, on_succeeded=True, language="en")
    env = {"EMAIL_URL": f"smtp://127.0.0.1:{port}", "DEFAULT_FROM_EMAIL": "pricefeed@buyer.test"}
    manage("listen_mail")
    manage("qcluster", env=env)
    manage("dispatch_outbox", env=env)

    dovecot.append(price_email(sender="Sales <sales@acme.test>", subject="Прайс на декабрь"))

    # The server has the mails before the dispatcher records them SENT: wait for both.
    wait_until(
        lambda: (
            len(received(path)) == 2
            and set(Notification.objects.values_list("status", flat=True))
            == {Notification.Status.SENT}
        ),
        60,
        "two notifications delivered and recorded",
    )
    mails = received(path)
    assert sorted(m["To"] for m in mails) == ["ops@buyer.test", "sales@acme.test"]
    price_import = PriceImport.objects.get()
    assert all(config.name in m["Subject"] and "succeeded" in m["Subject"] for m in mails)
    notifications = {n.recipient: n for n in Notification.objects.all()}
    assert {m["Message-ID"] for m in mails} == {n.message_id for n in notifications.values()}
    assert {n.status for n in notifications.values()} == {Notification.Status.SENT}
    assert all(n.price_import_id == price_import.pk for n in notifications.values())


RETRY_FAST = {
    "PRICEFEED_OUTBOX_RETRY_BASE": "0.3",
    "PRICEFEED_OUTBOX_RETRY_MAX": "1",
    "PRICEFEED_OUTBOX_POLL_INTERVAL": "0.3",
    "PRICEFEED_OUTBOX_CLAIM_TIMEOUT": "3",
    "PRICEFEED_Q_TIMEOUT": "4",
    "PRICEFEED_Q_RETRY": "5",
    "DEFAULT_FROM_EMAIL": "pricefeed@buyer.test",
    "ADMINS": "Ops <ops@buyer.test>",
}


def _imported(mailbox_factory, config_factory, dovecot):
    """One SUCCEEDED import whose outcome event is waiting in the outbox."""
    from tests.factories import receive, run_all

    mailbox = mailbox_factory(dovecot)
    config = config_factory(mailbox)
    Subscription.objects.create(email="buyer@buyer.test", language="en")
    (price_import,) = run_all(receive(mailbox, [("price.csv", b"sku;price\nA-1;10,50\n")]))
    assert price_import.status == PriceImport.Status.SUCCEEDED
    return config, price_import


def test_a_temporary_smtp_failure_is_retried_after_backoff_and_delivered(
    dovecot, make_mailbox, make_config, manage, smtp_server, admin_client
):
    port, path = smtp_server("--fail-first", "2", "--code", "451")
    _imported(make_mailbox, make_config, dovecot)
    env = {**RETRY_FAST, "EMAIL_URL": f"smtp://127.0.0.1:{port}"}
    manage("qcluster", env=env)
    manage("dispatch_outbox", env=env)

    # The server has the mail before the dispatcher records it SENT: wait for both.
    wait_until(
        lambda: (
            len(received(path)) == 1
            and Notification.objects.filter(status=Notification.Status.SENT).exists()
            and OutboxEvent.objects.filter(
                kind="notification.send", status=OutboxEvent.Status.SENT
            ).exists()
        ),
        60,
        "delivered after two 451s, and recorded",
    )
    notification = Notification.objects.get()
    assert notification.status == Notification.Status.SENT
    assert notification.attempts == 3
    send_event = OutboxEvent.objects.get(kind="notification.send")
    assert (send_event.status, send_event.attempts) == (OutboxEvent.Status.SENT, 3)

    # The trouble stays visible: the list's attempts column and "retried" filter, and each
    # attempt with the server's reply on the notification's page.
    listed = admin_client.get(
        reverse("admin:notifications_notification_changelist"),
        {"retried": "yes"},
        HTTP_ACCEPT_LANGUAGE="ru",
    )
    assert [n.pk for n in listed.context["cl"].result_list] == [notification.pk]
    assert cells(listed.content.decode(), "attempts") == ["3"]
    events = admin_client.get(reverse("admin:outbox_outboxevent_changelist"), {"retried": "yes"})
    assert [e.pk for e in events.context["cl"].result_list] == [send_event.pk]
    page = admin_client.get(
        reverse("admin:notifications_notification_change", args=[notification.pk]),
        HTTP_ACCEPT_LANGUAGE="ru",
    ).content.decode()
    attempts = re.findall(r"<tr><td>.*?</tr>", page)
    assert len(attempts) == 3
    assert all("отказ, будет повтор" in a and "451 scripted failure" in a for a in attempts[:2])
    assert "принято" in attempts[2] and "250" in attempts[2]
    assert "Message accepted for delivery" in attempts[2]


def test_a_permanent_smtp_failure_ends_failed_with_exactly_one_alert(
    dovecot, make_mailbox, make_config, manage, smtp_server
):
    port, path = smtp_server("--reject-rcpt", "buyer@buyer.test")
    _imported(make_mailbox, make_config, dovecot)
    env = {
        **RETRY_FAST,
        "EMAIL_URL": f"smtp://127.0.0.1:{port}",
        "PRICEFEED_OUTBOX_MAX_ATTEMPTS": "3",
    }
    manage("qcluster", env=env)
    manage("dispatch_outbox", env=env)

    wait_until(
        lambda: OutboxEvent.objects.filter(
            kind="notification.send", status=OutboxEvent.Status.FAILED
        ).exists(),
        60,
        "send event FAILED",
    )
    notification = Notification.objects.get()
    assert notification.status == Notification.Status.FAILED
    assert "550" in notification.last_error
    # The alert went to ADMINS (accepted by the server), once.
    wait_until(lambda: len(received(path)) == 1, 20, "one alert delivered")
    (alert_mail,) = received(path)
    assert alert_mail["To"] == "ops@buyer.test"
    assert "outbox event failed" in alert_mail["Subject"]


def test_a_crash_after_the_server_accepted_gives_at_most_one_duplicate_with_the_same_id(
    dovecot, make_mailbox, make_config, manage, smtp_server, tmp_path
):
    port, path = smtp_server()
    _imported(make_mailbox, make_config, dovecot)
    env = {
        **RETRY_FAST,
        "EMAIL_URL": f"smtp://127.0.0.1:{port}",
        "PRICEFEED_CRASH_AT": "notification_after_smtp",
        "PRICEFEED_CRASH_ONCE": str(tmp_path / "crashed"),
    }
    manage("qcluster", env=env)
    manage("dispatch_outbox", env=env)

    wait_until(
        lambda: Notification.objects.filter(status=Notification.Status.SENT).exists(),
        60,
        "notification sent after the crash",
    )
    assert (tmp_path / "crashed").exists()
    mails = received(path)
    assert len(mails) == 2  # the one accepted before the crash, and the retry
    assert mails[0]["Message-ID"] == mails[1]["Message-ID"]
    assert mails[0]["Message-ID"] == Notification.objects.get().message_id
