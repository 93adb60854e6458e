"""The notification list shows what is wrong and what comes next, and acts on it: each
row's last error and its send event's next attempt; the outbox's retry now, requeue and
give up on the send events of the selected notifications, for those allowed."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from access.roles import OPERATOR
from devkit.samples import price_list_csv
from notifications import services
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from tests.access.support import at_least, each_role, logged_in, offered, run_action
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")

NOTIFICATIONS = reverse("admin:notifications_notification_changelist")
Event = OutboxEvent.Status
REFUSED = "SMTPRecipientsRefused: {'ops@buyer.test': (550, b'5.1.1 mailbox unavailable')}"


def cells(content: str, column: str) -> list[str]:
    found = re.findall(rf'<td class="field-{column}[^"]*">(.*?)</td>', content, re.S)
    # As shown: unescaped, Django's non-breaking spaces ("5\xa0minutes") as spaces.
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).replace("\xa0", " ").strip() for c in found]


@pytest.fixture
def notification(mailbox, config) -> Notification:
    """One notification about one import, its send event waiting."""
    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    services.notifications_fan_out(import_id=price_import.pk)
    return Notification.objects.get()


def event_of(notification: Notification) -> OutboxEvent:
    return OutboxEvent.objects.get(kind=services.SEND_EVENT, aggregate_id=str(notification.pk))


def backing_off(notification: Notification, minutes: int = 5) -> OutboxEvent:
    """As after a refused attempt: the error on the notification, its event due later."""
    Notification.objects.filter(pk=notification.pk).update(attempts=1, last_error=REFUSED)
    OutboxEvent.objects.filter(pk=event_of(notification).pk).update(
        attempts=1,
        last_error=REFUSED,
        next_attempt_at=timezone.now() + timedelta(minutes=minutes, seconds=30),
    )
    return event_of(notification)


def test_a_backing_off_notification_shows_its_error_and_next_attempt(admin_client, notification):
    event = backing_off(notification)

    content = admin_client.get(NOTIFICATIONS).content.decode()

    assert cells(content, "short_error") == [REFUSED]
    assert cells(content, "next_attempt") == ["in 5 minutes"]
    # The absolute time on hover, in the configured zone.
    local = timezone.localtime(event.next_attempt_at)
    assert f'title="{local:%Y-%m-%d %H:%M:%S} UTC"' in content


def test_a_sent_or_given_up_notification_has_no_next_attempt(admin_client, notification):
    OutboxEvent.objects.update(status=Event.FAILED, last_error="marked failed by ops")

    content = admin_client.get(NOTIFICATIONS).content.decode()

    assert cells(content, "next_attempt") == ["—"]
    # No error of its own: why its event was given up.
    assert cells(content, "short_error") == ["marked failed by ops"]


def test_each_notification_of_a_digest_shows_the_digest_events_next_attempt(
    admin_client, mailbox, config
):
    Subscription.objects.create(email="ops@buyer.test")
    message = receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("b.csv", price_list_csv(ROWS))])
    run_all(message)
    assert services.notifications_fan_out_message(message_id=message.pk) == 1
    OutboxEvent.objects.filter(kind=services.SEND_EVENT).update(
        next_attempt_at=timezone.now() + timedelta(hours=2, minutes=1)
    )

    content = admin_client.get(NOTIFICATIONS).content.decode()

    assert cells(content, "next_attempt") == ["in 2 hours", "in 2 hours"]


def test_the_notification_list_costs_the_same_queries_for_one_row_or_many(
    admin_client, notification, mailbox
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(NOTIFICATIONS).status_code == 200
        return len(captured)

    one = queries()
    for n in range(3):
        (price_import,) = run_all(receive(mailbox, [(f"p{n}.csv", price_list_csv(ROWS))]))
        services.notifications_fan_out(import_id=price_import.pk)

    assert Notification.objects.count() == 4
    assert queries() == one


# -- the outbox's actions, per role -----------------------------------------------------


@each_role
def test_retry_now_is_an_operators(client, role, notification):
    backing_off(notification)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("retry_now" in offered(client, NOTIFICATIONS)) == allowed
    run_action(client, NOTIFICATIONS, "retry_now", notification.pk)

    assert (event_of(notification).next_attempt_at <= timezone.now()) is allowed


@each_role
def test_requeue_is_an_operators_and_makes_the_notification_pending_again(
    client, role, notification
):
    OutboxEvent.objects.update(status=Event.FAILED, attempts=8, last_error=REFUSED)
    Notification.objects.update(status=Notification.Status.FAILED, last_error=REFUSED)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("requeue" in offered(client, NOTIFICATIONS)) == allowed
    run_action(client, NOTIFICATIONS, "requeue", notification.pk)

    event = event_of(notification)
    notification.refresh_from_db()
    if allowed:
        assert (event.status, event.attempts) == (Event.NEW, 0)
        assert notification.status == Notification.Status.PENDING
    else:
        assert event.status == Event.FAILED
        assert notification.status == Notification.Status.FAILED


@each_role
def test_give_up_is_an_operators_and_fails_the_notification_with_the_reason(
    client, role, notification
):
    backing_off(notification)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("give_up" in offered(client, NOTIFICATIONS)) == allowed
    run_action(client, NOTIFICATIONS, "give_up", notification.pk)

    event = event_of(notification)
    notification.refresh_from_db()
    if allowed:
        assert event.status == Event.FAILED
        assert notification.status == Notification.Status.FAILED
        assert notification.last_error == f"given up by staff-{role}"
    else:
        assert (event.status, notification.status) == (Event.NEW, Notification.Status.PENDING)


def test_give_up_on_one_notification_of_a_digest_gives_up_its_mail(
    admin_client, admin_user, mailbox, config
):
    Subscription.objects.create(email="ops@buyer.test")
    message = receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("b.csv", price_list_csv(ROWS))])
    run_all(message)
    services.notifications_fan_out_message(message_id=message.pk)
    later = Notification.objects.order_by("pk").last()

    response = run_action(admin_client, NOTIFICATIONS, "give_up", later.pk)

    assert response.status_code == 302
    assert OutboxEvent.objects.get(kind=services.SEND_EVENT).status == Event.FAILED
    # The one selected, and the digest's other one: they were to go in the same mail.
    assert set(Notification.objects.values_list("status", flat=True)) == {
        Notification.Status.FAILED
    }
    assert [str(m) for m in response.wsgi_request._messages] == ["1 notification given up."]


def test_an_action_says_what_it_did_and_what_it_skipped(admin_client, notification):
    response = run_action(admin_client, NOTIFICATIONS, "requeue", notification.pk)

    shown = [str(m) for m in response.wsgi_request._messages]
    assert shown == ["0 notifications requeued.", "1 skipped: not failed."]
