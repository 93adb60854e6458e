"""A notification keeps the id of the send event that delivers it: the outbox keeps no
index by aggregate for it. Migration 0004 links the notifications of existing events."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from devkit.samples import price_list_csv
from mailboxes.models import InboundMessage
from notifications import selectors, services
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")


def test_every_notification_of_a_digest_keeps_the_digests_event(mailbox, config):
    Subscription.objects.create(email="ops@buyer.test")
    message = receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("b.csv", price_list_csv(ROWS))])
    run_all(message)

    services.notifications_fan_out_message(message_id=message.pk)

    (event,) = OutboxEvent.objects.filter(kind=services.SEND_EVENT)
    notifications = list(Notification.objects.order_by("pk"))
    assert len(notifications) == 2
    assert {n.send_event for n in notifications} == {event.pk}
    # Either one finds the event, with both notifications it delivers.
    assert selectors.send_events_of([notifications[1].pk]) == {
        event.pk: [n.pk for n in notifications]
    }
    # A fan-out run again finds the event through the notifications: no second one.
    assert services.notifications_fan_out_message(message_id=message.pk) == 0


@pytest.mark.django_db(transaction=True)
def test_the_migration_links_existing_notifications_to_their_latest_event(mailbox, config):
    executor = MigrationExecutor(connection)
    before = [
        ("notifications", "0003_overdue_notifications"),
        ("outbox", "0004_event_ids_in_time_order"),
    ]
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        Event = old.get_model("outbox", "OutboxEvent")
        Old = old.get_model("notifications", "Notification")
        # The tables of other apps are those of today (only these two apps went back).
        message = InboundMessage.objects.create(
            mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1, dedup_key="m"
        )
        price_import = PriceImport.objects.create(
            message=message, config=config, attachment_key="part2", filename="p"
        )
        single, first, second, _never_sent = (
            Old.objects.create(price_import_id=price_import.pk, recipient=f"{n}@b.test", kind=n)
            for n in ("a", "b", "c", "d")
        )

        def event(payload: dict, aggregate) -> uuid.UUID:
            return Event.objects.create(
                kind=services.SEND_EVENT,
                aggregate_type="notifications.notification",
                aggregate_id=str(aggregate.pk),
                payload=payload,
            ).pk

        failed = event({"notification_id": single.pk}, single)
        digest = event({"notification_ids": [first.pk, second.pk]}, first)
        again = event({"notification_id": single.pk}, single)  # published again, later
        Event.objects.filter(pk=failed).update(created_at="2026-01-01T00:00:00Z")
        Event.objects.create(kind="outbox.noop", aggregate_type="x", aggregate_id="1")
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    linked = dict(Notification.objects.values_list("recipient", "send_event"))
    assert linked == {"a@b.test": again, "b@b.test": digest, "c@b.test": digest, "d@b.test": None}
    assert "outbox_aggregate" not in _indexes("outbox_outboxevent")


def _indexes(table: str) -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.get_constraints(cursor, table))
