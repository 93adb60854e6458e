"""Every try at delivering a notification is kept with the server's reply: one refused
twice and then sent shows the two refusals and the acceptance, in its list (attempts,
"retried") and on its page."""

from __future__ import annotations

import smtplib

import pytest
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend
from django.urls import reverse
from django.utils import translation

from core.storedtext import CUT
from devkit.samples import price_list_csv
from notifications import services
from notifications.models import DeliveryAttempt, Notification, Subscription
from outbox import services as outbox_services
from outbox.models import OutboxEvent
from tests.factories import ROWS, receive, run_all

from .test_admin_trouble import cells

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")

Attempt = DeliveryAttempt.Outcome
NOTIFICATIONS = reverse("admin:notifications_notification_changelist")


class RefusingBackend(LocmemBackend):
    """locmem, but the first ``refusals`` mails get a 451 with ``reply`` as its text."""

    refusals = 2
    reply = b"4.3.0 try again later"

    def send_messages(self, messages):
        if RefusingBackend.refusals > 0:
            RefusingBackend.refusals -= 1
            raise smtplib.SMTPDataError(451, RefusingBackend.reply)
        return super().send_messages(messages)


@pytest.fixture
def refusing(settings, monkeypatch):
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    monkeypatch.setattr(RefusingBackend, "refusals", 2)
    return RefusingBackend


@pytest.fixture
def notification(mailbox, config) -> Notification:
    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    services.notifications_fan_out(import_id=price_import.pk)
    return Notification.objects.get()


def deliver_once() -> None:
    """One claim of the due events and their delivery (the outbox's own path)."""
    OutboxEvent.objects.update(next_attempt_at="2000-01-01T00:00:00Z")
    ids = outbox_services.events_claim(dispatcher="d", limit=100)
    outbox_services.events_deliver(event_ids=ids, dispatcher="d")


def test_two_refusals_and_the_acceptance_are_each_kept(notification, refusing, mailoutbox):
    for _ in range(3):
        deliver_once()

    notification.refresh_from_db()
    assert (notification.status, notification.attempts) == (Notification.Status.SENT, 3)
    assert notification.last_error == ""  # the last error is cleared: the attempts keep it
    attempts = list(notification.delivery_attempts.order_by("pk"))
    assert [(a.outcome, a.code) for a in attempts] == [
        (Attempt.REFUSED, "451"),
        (Attempt.REFUSED, "451"),
        (Attempt.ACCEPTED, ""),  # locmem gives no SMTP reply
    ]
    assert all("451 4.3.0 try again later" in a.reply for a in attempts[:2])
    assert attempts[0].at <= attempts[1].at <= attempts[2].at


def test_the_last_attempt_is_recorded_as_given_up(notification, refusing, settings):
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 2
    deliver_once()
    deliver_once()
    notification.refresh_from_db()
    assert notification.status == Notification.Status.FAILED
    outcomes = list(notification.delivery_attempts.values_list("outcome", flat=True))
    assert outcomes == [Attempt.REFUSED, Attempt.FAILED]


def test_a_servers_long_reply_is_cut_as_every_foreign_text(notification, refusing, monkeypatch):
    monkeypatch.setattr(RefusingBackend, "reply", b"x" * 5000 + b"\x00\xff")
    deliver_once()
    (attempt,) = notification.delivery_attempts.all()
    reply = attempt.reply_text["params"]["reply"]
    assert len(reply) == CUT and reply.endswith("…")
    assert len(attempt.reply) < 2 * CUT


def test_only_the_latest_attempts_are_kept(notification, refusing, monkeypatch, settings):
    monkeypatch.setattr(DeliveryAttempt, "KEPT", 3)
    monkeypatch.setattr(RefusingBackend, "refusals", 5)
    for _ in range(5):
        deliver_once()
    kept = list(notification.delivery_attempts.order_by("pk").values_list("pk", flat=True))
    assert len(kept) == 3
    assert kept == sorted(DeliveryAttempt.objects.values_list("pk", flat=True))[-3:]


def test_the_list_shows_attempts_and_finds_the_retried(
    notification, refusing, mailbox, config, admin_client
):
    for _ in range(3):
        deliver_once()
    # Another one, sent at the first attempt.
    refusing.refusals = 0
    Subscription.objects.create(email="sales@buyer.test")
    (other,) = run_all(receive(mailbox, [("q.csv", price_list_csv(ROWS))]))
    services.notifications_fan_out(import_id=other.pk)
    deliver_once()
    assert Notification.objects.filter(status=Notification.Status.SENT).count() == 3

    with translation.override("ru"):
        retried = admin_client.get(NOTIFICATIONS, {"retried": "yes"}, HTTP_ACCEPT_LANGUAGE="ru")
        once = admin_client.get(NOTIFICATIONS, {"retried": "no"}, HTTP_ACCEPT_LANGUAGE="ru")
    assert [n.pk for n in retried.context["cl"].result_list] == [notification.pk]
    assert cells(retried.content.decode(), "attempts") == ["3"]
    assert notification.pk not in [n.pk for n in once.context["cl"].result_list]
    assert len(once.context["cl"].result_list) == 2
    assert "повторялось" in retried.content.decode()


def test_the_page_lists_each_attempt_with_the_servers_reply(notification, refusing, admin_client):
    for _ in range(3):
        deliver_once()
    page = admin_client.get(
        reverse("admin:notifications_notification_change", args=[notification.pk]),
        HTTP_ACCEPT_LANGUAGE="ru",
    ).content.decode()
    table = page[page.index('class="delivery-attempts"') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 4  # the header and three attempts
    assert table.count("451") == 4  # code and reply, twice
    assert table.count("отказ, будет повтор") == 2
    assert "принято" in table
    # What it is about, numbered as Russian writes it (core.adminutils.numbered).
    assert f"№ {notification.price_import_id} " in page
