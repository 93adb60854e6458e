"""A notification's and its send event's stored reasons (an SMTP refusal, a give-up) are
kept as a msgid and its values (and their English) and shown in the reader's language on
the notification and outbox pages; a mail quotes an import's reason in the mail's
language."""

from __future__ import annotations

import html
import smtplib

import pytest
from django.urls import reverse
from django.utils import translation

from core.claims import CLAIM_EXPIRED
from core.texts import Text, as_json, error_text, store, stored
from devkit.samples import price_list_csv
from notifications import content, services
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.imports import lifecycle
from pricefeed.models import PriceImport
from pricefeed.parsing import messages as parsing_messages
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")

NOTIFICATIONS = reverse("admin:notifications_notification_changelist")
EVENTS = reverse("admin:outbox_outboxevent_changelist")
REFUSAL = smtplib.SMTPRecipientsRefused({"ops@buyer.test": (550, b"5.1.1 mailbox unavailable")})
IN_RUSSIAN = "SMTP-сервер отклонил получателя ops@buyer.test (550 5.1.1 mailbox unavailable)"


def page(client, url: str, language: str = "ru") -> str:
    with translation.override(language):
        response = client.get(url, headers={"accept-language": language})
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.fixture
def notification(mailbox, config) -> Notification:
    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    services.notifications_fan_out(import_id=price_import.pk)
    return Notification.objects.get()


def event_of(notification: Notification) -> OutboxEvent:
    return OutboxEvent.objects.get(kind=services.SEND_EVENT, aggregate_id=str(notification.pk))


def test_an_smtp_refusal_is_stored_in_english(notification, monkeypatch):
    monkeypatch.setattr(services, "_send", lambda mails: {event: REFUSAL for event, _ in mails})
    event = event_of(notification)

    services.notifications_send([event])
    notification.refresh_from_db()

    assert notification.last_error == (
        "the SMTP server refused the recipient ops@buyer.test (550 5.1.1 mailbox unavailable)"
    )
    assert notification.last_error_text == as_json(error_text(REFUSAL))


def test_an_smtp_refusal_shows_in_russian_on_the_notification_list_and_page(
    admin_client, notification
):
    Notification.objects.update(attempts=1, **stored("last_error", error_text(REFUSAL)))
    url = reverse("admin:notifications_notification_change", args=[notification.pk])

    assert IN_RUSSIAN in page(admin_client, NOTIFICATIONS)
    assert IN_RUSSIAN in page(admin_client, url)
    assert error_text(REFUSAL) in page(admin_client, url, "en")


def test_an_smtp_refusal_shows_in_russian_on_the_outbox_list_and_page(admin_client, notification):
    event = event_of(notification)
    OutboxEvent.objects.filter(pk=event.pk).update(
        attempts=1, **stored("last_error", error_text(REFUSAL))
    )
    url = reverse("admin:outbox_outboxevent_change", args=[event.pk])

    assert IN_RUSSIAN in page(admin_client, EVENTS)
    assert IN_RUSSIAN in page(admin_client, url)


def test_a_give_up_is_stored_in_english_and_shown_in_russian(
    admin_client, admin_user, notification
):
    with translation.override("ru"):
        admin_client.post(
            NOTIFICATIONS,
            {"action": "give_up", "_selected_action": [notification.pk]},
            headers={"accept-language": "ru"},
        )
    notification.refresh_from_db()

    assert notification.status == Notification.Status.FAILED
    assert notification.last_error == f"given up by {admin_user.username}"
    assert event_of(notification).last_error == f"given up by {admin_user.username}"
    shown = f"попытки прекращены пользователем {admin_user.username}"
    assert shown in page(admin_client, NOTIFICATIONS)
    assert shown in page(admin_client, EVENTS)


def test_an_events_crash_reason_shows_in_russian_on_the_outbox_list(admin_client, notification):
    event = event_of(notification)
    OutboxEvent.objects.filter(pk=event.pk).update(
        status=OutboxEvent.Status.FAILED,
        **stored("last_error", Text(CLAIM_EXPIRED, worker="host-1:4242")),
    )

    assert "захват обработчиком host-1:4242 просрочен" in page(admin_client, EVENTS)


def test_a_mail_quotes_the_imports_reason_in_the_mails_language(notification):
    price_import = PriceImport.objects.get()
    store(price_import, "last_error", Text(lifecycle.NO_VALID_ROWS_FAILED, failed=2))

    with translation.override("ru"):
        russian = content.reason(price_import)
    with translation.override("en"):
        english = content.reason(price_import)

    assert russian == "нет ни одной корректной строки с ценой (2 строки с ошибками)"
    assert english == "no valid price rows (2 row(s) failed)"


def test_a_mail_names_the_file_where_an_unpacking_error_says_attachment(notification):
    price_import = PriceImport.objects.get()
    price_import.filename = "прайс.zip"
    store(
        price_import,
        "last_error",
        Text(parsing_messages.ZIP_DAMAGED, where=parsing_messages.ATTACHMENT_ARCHIVE, error="x"),
    )

    with translation.override("en"):
        english = content.reason(price_import)

    assert english == "archive 'прайс.zip': damaged zip archive (x)"
