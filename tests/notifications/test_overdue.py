"""Mails about lists that did not come: one per alert and recipient, to the subscriptions
that want them for the config, in each one's language, whatever the retries."""

from __future__ import annotations

import smtplib
from datetime import UTC, datetime, time, timedelta

import pytest
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend

from notifications import overdue, services
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.models import OverdueAlert, PriceImport, PriceListConfig
from pricefeed.overdue import overdue_alerts_raise
from tests import factories
from tests.factories import deliver_everything

MONDAY = 1


class RejectingBackend(LocmemBackend):
    """locmem, but refuses mail to addresses starting with "bad" like a server's 550."""

    def send_messages(self, messages):
        for message in messages:
            if any(r.startswith("bad") for r in message.to):
                raise smtplib.SMTPRecipientsRefused({message.to[0]: (550, b"no such user")})
        return super().send_messages(messages)


DUE = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)  # Monday 10:00 in Moscow


@pytest.fixture
def weekly(mailbox) -> PriceListConfig:
    config = factories.create_config(
        mailbox,
        name="Поставщик-Юг",
        expected_weekdays=[MONDAY],
        expected_by=time(10, 0),
        expected_timezone="Europe/Moscow",
    )
    PriceListConfig.objects.filter(pk=config.pk).update(
        created_at=datetime(2026, 11, 1, tzinfo=UTC)
    )
    config.refresh_from_db()
    return config


def raise_alert(config: PriceListConfig) -> OverdueAlert:
    (alert,) = overdue_alerts_raise(now=DUE + timedelta(hours=1))
    assert alert.config == config
    return alert


def test_subscribers_who_want_overdue_lists_get_one_mail_each_in_their_language(
    weekly, mailbox, mailoutbox, settings
):
    settings.PRICEFEED_PUBLIC_URL = "https://pricefeed.example.com/"
    settings.DEFAULT_FROM_EMAIL = "pricefeed@prices.example.com"
    other = factories.create_config(mailbox, name="other")
    Subscription.objects.create(email="Ops@Buyer.test", language="en")
    Subscription.objects.create(email="zakupki@buyer.test", language="ru").configs.add(weekly)
    Subscription.objects.create(email="other@buyer.test").configs.add(other)
    Subscription.objects.create(email="quiet@buyer.test", on_overdue=False)
    Subscription.objects.create(email="off@buyer.test", enabled=False)
    Subscription.objects.create(reply_to_sender=True)  # no sender to reply to

    alert = raise_alert(weekly)
    deliver_everything()

    assert sorted(m.to[0] for m in mailoutbox) == ["ops@buyer.test", "zakupki@buyer.test"]
    mails = {m.to[0]: m for m in mailoutbox}
    link = f"https://pricefeed.example.com/admin/pricefeed/pricelistconfig/{weekly.pk}/change/"

    english = mails["ops@buyer.test"]
    assert english.subject == "[pricefeed] Поставщик-Юг: no price list by Nov. 30, 2026, 10 a.m."
    assert english.extra_headers["Content-Language"] == "en"
    assert (
        "The price list for Поставщик-Юг was expected by Nov. 30, 2026, 10 a.m. "
        "(Europe/Moscow) and has not come." in english.body
    )
    assert f"The config in pricefeed: {link}" in english.body
    assert "Expected: Mon by 10:00" in english.body
    assert "No list has come for this config yet." in english.body
    assert f'href="{link}"' in english.alternatives[0][0]

    russian = mails["zakupki@buyer.test"]
    assert russian.extra_headers["Content-Language"] == "ru"
    assert russian.subject == (
        "[pricefeed] Поставщик-Юг: прайс-лист не пришёл к 30 ноября 2026 г. 10:00"
    )
    assert "Прайс-лист «Поставщик-Юг» ожидался к 30 ноября 2026 г. 10:00" in russian.body
    assert f"Настройка в pricefeed: {link}" in russian.body
    assert "Ожидается: Пн к 10:00" in russian.body

    notes = Notification.objects.filter(alert=alert)
    assert {(n.kind, n.status) for n in notes} == {("list_overdue", Notification.Status.SENT)}
    assert {n.message_id for n in notes} == {
        f"<pricefeed.overdue.{n.pk}@prices.example.com>" for n in notes
    }
    assert {m.extra_headers["Message-ID"] for m in mailoutbox} == {n.message_id for n in notes}


def test_the_mail_names_the_last_list_that_came(weekly, mailoutbox):
    Subscription.objects.create(email="ops@buyer.test")
    message = factories.create_message(weekly.mailbox)
    PriceImport.objects.create(
        message=message,
        config=weekly,
        attachment_key="part1",
        created_at=datetime(2026, 11, 23, 6, 30, tzinfo=UTC),
    )

    raise_alert(weekly)
    deliver_everything()

    (mail,) = mailoutbox
    assert "The last list came: Nov. 23, 2026, 9:30 a.m." in mail.body


def test_an_alert_is_mailed_once_whatever_the_retries(weekly, mailoutbox):
    Subscription.objects.create(email="ops@buyer.test")
    Subscription.objects.create(email="OPS@buyer.test")  # the same address twice
    alert = raise_alert(weekly)
    deliver_everything()

    assert overdue.overdue_fan_out(alert_id=alert.pk) == 0  # the fan-out run again
    sent = OutboxEvent.objects.filter(kind=overdue.SEND_EVENT).get()
    assert services.send(overdue.LIST_OVERDUE, [sent]) == {sent.id: None}  # run again
    deliver_everything()

    assert len(mailoutbox) == 1
    assert Notification.objects.filter(alert=alert).count() == 1


def test_a_refused_mail_is_recorded_and_retried(weekly, mailoutbox, settings):
    settings.EMAIL_BACKEND = f"{__name__}.RejectingBackend"
    Subscription.objects.create(email="bad@buyer.test")
    Subscription.objects.create(email="ops@buyer.test")

    raise_alert(weekly)
    deliver_everything()

    refused = Notification.objects.get(recipient="bad@buyer.test")
    assert refused.status == Notification.Status.PENDING
    # The one error format of every kind: the SMTP reply, in words an operator reads.
    assert "bad@buyer.test" in refused.last_error and "550" in refused.last_error
    assert refused.attempts == 1
    assert Notification.objects.get(recipient="ops@buyer.test").status == "SENT"


def test_overdue_is_a_kind_subscriptions_choose():
    flag = overdue.LIST_OVERDUE.flag("")
    assert Subscription(on_overdue=True).wants(flag)
    assert not Subscription(on_overdue=False).wants(flag)
    assert not Subscription(on_failed=True, on_overdue=False).wants(flag)


def test_the_overdue_mails_are_listed_in_the_admin(weekly, client, mailoutbox):
    from django.contrib.auth.models import User

    Subscription.objects.create(email="ops@buyer.test")
    raise_alert(weekly)
    deliver_everything()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "x"))

    listed = client.get("/admin/notifications/notification/?kind__exact=list_overdue")
    subscriptions = client.get("/admin/notifications/subscription/")

    assert listed.status_code == 200
    assert [n.recipient for n in listed.context["cl"].result_list] == ["ops@buyer.test"]
    assert "Поставщик-Юг" in listed.content.decode()
    assert "when a list is overdue" in subscriptions.content.decode().lower()
