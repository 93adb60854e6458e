"""The delivery admin: endpoints with write-only secrets and checked URLs, the list of
deliveries in Russian, and "retry now" for operators only."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import translation

from access.roles import ADMINISTRATOR, OPERATOR, VIEWER
from core.texts import Text, stored
from delivery.kinds import EventKind
from delivery.models import AmqpTarget, Delivery, Webhook
from delivery.texts import HTTP_STATUS
from outbox import services as outbox
from outbox.models import OutboxEvent
from tests.access.support import at_least, each_role, logged_in, offered, run_action

from .support import SECRET

pytestmark = pytest.mark.usefixtures("fast_password_hashing")

DELIVERIES = reverse("admin:delivery_delivery_changelist")


def _stored_column(table: str, column: str, pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def test_a_webhook_is_added_with_its_secret_encrypted_and_never_shown(admin_client):
    response = admin_client.post(
        reverse("admin:delivery_webhook_add"),
        {
            "name": "Магазин",
            "url": "http://127.0.0.1:9/hook",
            "secret": SECRET,
            "kinds": [EventKind.PRICE_CHANGED, EventKind.IMPORT_FINISHED],
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    hook = Webhook.objects.get()
    assert hook.secret == SECRET
    assert hook.kinds == ["price.changed", "import.finished"]
    assert _stored_column("delivery_webhook", "secret", hook.pk).startswith("fernet:")
    page = admin_client.get(reverse("admin:delivery_webhook_change", args=[hook.pk]))
    assert SECRET not in page.content.decode()

    # Saved again without a secret: the stored one is kept.
    admin_client.post(
        reverse("admin:delivery_webhook_change", args=[hook.pk]),
        {"name": "Магазин", "url": hook.url, "secret": "", "kinds": ["offer.changed"]},
    )
    hook.refresh_from_db()
    assert (hook.secret, hook.kinds, hook.enabled) == (SECRET, ["offer.changed"], False)


def test_plain_http_is_refused_in_russian_unless_allowed(admin_client, settings):
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = False
    with translation.override("ru"):
        response = admin_client.post(
            reverse("admin:delivery_webhook_add"),
            {"name": "Магазин", "url": "http://shop.example.ru/hook", "secret": SECRET},
            headers={"accept-language": "ru"},
        )
    assert response.status_code == 200
    assert "Незашифрованный http:// не разрешён" in response.content.decode()
    assert not Webhook.objects.exists()


def test_a_short_secret_is_refused_in_russian(admin_client):
    with translation.override("ru"):
        response = admin_client.post(
            reverse("admin:delivery_webhook_add"),
            {"name": "Магазин", "url": "https://shop.example.ru/hook", "secret": "короткий"},
            headers={"accept-language": "ru"},
        )
    assert "Секрет должен содержать не менее 16 символов." in response.content.decode()


def test_a_password_typed_in_the_amqp_url_is_stored_apart_encrypted(admin_client):
    response = admin_client.post(
        reverse("admin:delivery_amqptarget_add"),
        {
            "name": "Шина",
            "url": "amqp://pricefeed:s%40cret@127.0.0.1:5672/prices",
            "exchange": "pricefeed",
            "kinds": [EventKind.PRICE_CHANGED],
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    target = AmqpTarget.objects.get()
    assert target.url == "amqp://pricefeed@127.0.0.1:5672/prices"
    assert target.password == "s@cret"
    assert _stored_column("delivery_amqptarget", "password", target.pk).startswith("fernet:")
    page = admin_client.get(reverse("admin:delivery_amqptarget_change", args=[target.pk]))
    assert "s@cret" not in page.content.decode()


def test_a_stored_password_never_goes_to_another_server(admin_client):
    target = AmqpTarget.objects.create(
        name="Шина", url="amqp://pricefeed@127.0.0.1:5672/", password="s3cret", kinds=[]
    )
    url = reverse("admin:delivery_amqptarget_change", args=[target.pk])
    with translation.override("ru"):
        moved = admin_client.post(
            url,
            {"name": "Шина", "url": "amqp://pricefeed@evil.example.ru:5672/"},
            headers={"accept-language": "ru"},
        )
    assert "Сервер изменился: введите его пароль ещё раз." in moved.content.decode()
    admin_client.post(
        url, {"name": "Шина", "url": "amqp://pricefeed@127.0.0.1:5672/", "exchange": "x"}
    )
    target.refresh_from_db()
    assert (target.password, target.exchange) == ("s3cret", "x")


def test_amqps_is_the_rule_and_options_are_refused(admin_client, settings):
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = False
    with translation.override("ru"):
        for url, message in (
            ("amqp://u@mq.example.ru/", "Незашифрованный amqp:// не разрешён"),
            ("amqps://u@mq.example.ru/?ssl_options=x", "не содержит ?параметров"),
            ("https://mq.example.ru/", "URL RabbitMQ начинается с amqps://"),
        ):
            response = admin_client.post(
                reverse("admin:delivery_amqptarget_add"),
                {"name": "Шина", "url": url, "password": "p"},
                headers={"accept-language": "ru"},
            )
            assert message in response.content.decode(), url
    assert not AmqpTarget.objects.exists()


@pytest.fixture
def failed_delivery(db) -> Delivery:
    hook = Webhook.objects.create(
        name="Магазин", url="https://shop.example.ru/h", secret=SECRET, kinds=list(EventKind)
    )
    with transaction.atomic():
        delivery = Delivery.objects.create(
            event_id="01a24152-0000-7000-8000-000000000001",
            event_kind=EventKind.PRICE_CHANGED,
            webhook=hook,
            status=Delivery.Status.FAILED,
            attempts=8,
            **stored("last_error", Text(HTTP_STATUS, status=503, detail="занят")),
        )
        send = outbox.publish("delivery.webhook", delivery, {"delivery_id": delivery.pk})
    OutboxEvent.objects.filter(pk=send.pk).update(status=OutboxEvent.Status.FAILED, attempts=8)
    Delivery.objects.filter(pk=delivery.pk).update(send_event=send.pk)
    delivery.refresh_from_db()
    return delivery


def test_the_list_speaks_russian_and_filters(admin_client, failed_delivery):
    with translation.override("ru"):
        page = admin_client.get(DELIVERIES, headers={"accept-language": "ru"})
    text = page.content.decode()
    assert "<h1>Доставки</h1>" in text
    assert "вебхук ответил HTTP 503: занят" in text
    assert "Не доставлена" in text
    assert "цена изменилась" in text
    for query, count in (
        ({"status__exact": "FAILED"}, 1),
        ({"status__exact": "SENT"}, 0),
        ({"channel": "amqp"}, 0),
        ({"channel": "webhook"}, 1),
        ({"event_kind__exact": "price.changed"}, 1),
    ):
        assert admin_client.get(DELIVERIES, query).context["cl"].result_count == count, query


@each_role
def test_retry_now_is_an_operators(client, role, failed_delivery):
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)
    assert ("retry_now" in offered(client, DELIVERIES)) == allowed
    run_action(client, DELIVERIES, "retry_now", failed_delivery.pk)
    failed_delivery.refresh_from_db()
    send = OutboxEvent.objects.get(pk=failed_delivery.send_event)
    if allowed:
        assert failed_delivery.status == Delivery.Status.PENDING
        assert (send.status, send.attempts) == (OutboxEvent.Status.NEW, 0)
    else:
        assert failed_delivery.status == Delivery.Status.FAILED
        assert send.status == OutboxEvent.Status.FAILED


@each_role
def test_only_administrators_keep_the_endpoints(client, role, failed_delivery):
    client = logged_in(client, role)
    page = client.get(reverse("admin:delivery_webhook_change", args=[failed_delivery.webhook_id]))
    assert (page.status_code == 200) == at_least(role, VIEWER)
    assert SECRET not in page.content.decode()
    add = client.get(reverse("admin:delivery_webhook_add"))
    assert (add.status_code == 200) == at_least(role, ADMINISTRATOR)
