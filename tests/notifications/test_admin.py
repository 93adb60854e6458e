"""Subscriptions and notifications in admin."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from notifications.models import Notification, Subscription
from tests.factories import receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")


def test_a_subscription_without_any_recipient_is_refused_with_a_message(admin_client, config):
    response = admin_client.post(
        reverse("admin:notifications_subscription_add"),
        {"email": "", "on_succeeded": "on", "enabled": "on", "configs": [config.pk]},
    )
    assert response.status_code == 200
    assert "Give an e-mail address, or tick “reply to sender”." in response.content.decode()
    assert not Subscription.objects.exists()


def test_notification_list_shows_recipient_and_status_and_its_page_the_message_id(
    admin_client, mailbox, config
):
    from notifications import services

    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", b"sku;price\nA-1;1\n")]))
    services.notifications_fan_out(import_id=price_import.pk)
    Notification.objects.update(
        status=Notification.Status.SENT, message_id="<pricefeed.notification.1@buyer.test>"
    )
    page = admin_client.get(reverse("admin:notifications_notification_changelist"))
    text = page.content.decode()
    assert "ops@buyer.test" in text
    assert '<td class="field-status">Sent</td>' in text
    assert page.context["cl"].result_count == 1
    notification = Notification.objects.get()
    detail = admin_client.get(
        reverse("admin:notifications_notification_change", args=[notification.pk])
    )
    assert "&lt;pricefeed.notification.1@buyer.test&gt;" in detail.content.decode()


def test_the_notification_list_and_the_subscription_form_speak_russian_when_asked(
    admin_client, mailbox, config
):
    from notifications import services

    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", b"sku;price\nA-1;1\n")]))
    services.notifications_fan_out(import_id=price_import.pk)

    with translation.override("ru"):
        listed = admin_client.get(
            reverse("admin:notifications_notification_changelist"),
            headers={"accept-language": "ru"},
        ).content.decode()
        form = admin_client.get(
            reverse("admin:notifications_subscription_add"), headers={"accept-language": "ru"}
        ).content.decode()

    assert "Получатель" in listed
    assert '<td class="field-status">Ожидает</td>' in listed
    assert "Больше не пытаться (отметить как ошибку)" in listed
    assert "Отвечать отправителю" in form
    assert "Писать также на адрес поставщика, с которого пришёл прайс-лист." in form
