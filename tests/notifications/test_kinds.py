"""Kinds of notification: a kind is a spec (notifications.kinds), and every kind is made,
sent, retried and recorded by the one pipeline (notifications.services). Migration 0005
moved the overdue-list mails into Notification."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from notifications import kinds, overdue, services
from notifications.kinds import Kind
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.models import OverdueAlert, PriceImport
from tests.factories import deliver_everything, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")


@pytest.fixture
def reviewed(tmp_path, settings):
    """A kind that exists only in this test: a spec and its three templates."""
    folder = tmp_path / "templates" / "throwaway"
    folder.mkdir(parents=True)
    (folder / "reviewed_subject.txt").write_text("Reviewed: {{ file }} ({{ language }})")
    (folder / "reviewed.txt").write_text(
        "{% autoescape off %}{{ file }} was reviewed.{% endautoescape %}"
    )
    (folder / "reviewed.html").write_text("<p>{{ file }} was reviewed.</p>")
    engine = settings.TEMPLATES[0]
    settings.TEMPLATES = [{**engine, "DIRS": [tmp_path / "templates", *engine["DIRS"]]}]
    kind = kinds.register(
        Kind(
            name="import_reviewed",
            label="import reviewed",
            subject="price_import",
            subjects=lambda: PriceImport.objects.all(),
            subscription_flag="on_succeeded",
            mail=lambda imports: ("throwaway/reviewed", {"file": imports[0].filename}),
            send_event="test.import_reviewed.send",
            message_id_prefix="pricefeed.reviewed",
        )
    )
    yield kind
    kinds.unregister(kind)


def test_a_kind_defined_by_a_spec_alone_is_sent_once(
    reviewed, mailbox, config, mailoutbox, settings
):
    settings.DEFAULT_FROM_EMAIL = "pricefeed@prices.example.com"
    Subscription.objects.create(email="Ops@Buyer.test", language="en")
    Subscription.objects.create(email="quiet@buyer.test", on_succeeded=False)
    (price_import,) = run_all(receive(mailbox, [("prices.csv", b"sku;price\nA-1;1\n")]))

    assert services.fan_out(reviewed, [(price_import, "")]) == 1
    deliver_everything()
    # Whatever runs again, the fan-out and the send, the mail has gone once.
    assert services.fan_out(reviewed, [(price_import, "")]) == 0
    (event,) = OutboxEvent.objects.filter(kind=reviewed.send_event)
    assert services.send(reviewed, [event]) == {event.id: None}
    deliver_everything()

    (mail,) = [m for m in mailoutbox if m.subject.startswith("Reviewed")]
    note = Notification.objects.get(kind="import_reviewed")
    assert mail.to == ["ops@buyer.test"]
    assert mail.subject == "Reviewed: prices.csv (en)"
    assert mail.body == "prices.csv was reviewed."
    assert (note.price_import_id, note.recipient, note.status) == (
        price_import.pk,
        "ops@buyer.test",
        Notification.Status.SENT,
    )
    assert note.message_id == mail.extra_headers["Message-ID"]
    assert note.message_id == f"<pricefeed.reviewed.{note.pk}@prices.example.com>"
    assert note.send_event == event.pk
    assert note.outcome_label() == "import reviewed"


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_overdue_mails_into_notifications(mailbox, config):
    executor = MigrationExecutor(connection)
    before = [("notifications", "0004_send_event")]
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        Event = old.get_model("outbox", "OutboxEvent")
        OldOverdue = old.get_model("notifications", "OverdueNotification")
        Old = old.get_model("notifications", "Notification")
        # The tables of other apps are those of today (only this app went back).
        alert = OverdueAlert.objects.create(
            config=config,
            period_start=timezone.now() - timedelta(days=1),
            due_at=timezone.now() - timedelta(hours=2),
        )
        (price_import,) = run_all(receive(mailbox, [("p.csv", b"sku;price\nA-1;1\n")]))
        Old.objects.create(price_import_id=price_import.pk, recipient="o@b.test", kind="SUCCEEDED")
        # Ids above every Notification's: new notifications must not take their numbers.
        sent = OldOverdue.objects.create(
            id=900,
            alert_id=alert.pk,
            recipient="sent@b.test",
            language="ru",
            status="SENT",
            message_id="<pricefeed.overdue.900@localhost>",
            attempts=1,
        )
        waiting = OldOverdue.objects.create(
            id=901, alert_id=alert.pk, recipient="wait@b.test", attempts=2, last_error="451"
        )
        event = Event.objects.create(
            kind=overdue.SEND_EVENT,
            aggregate_type="notifications.overduenotification",
            aggregate_id=str(waiting.pk),
            payload={"notification_id": waiting.pk},
        )
        OldOverdue.objects.filter(pk=waiting.pk).update(send_event=event.pk)
        OldOverdue.objects.filter(pk=sent.pk).update(send_event=event.pk)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    outcome = Notification.objects.get(recipient="o@b.test")
    assert (outcome.kind, outcome.outcome) == ("import_outcome", "SUCCEEDED")
    moved = {n.recipient: n for n in Notification.objects.filter(kind="list_overdue")}
    assert set(moved) == {"sent@b.test", "wait@b.test"}
    assert all(n.alert_id == alert.pk and n.price_import_id is None for n in moved.values())
    kept = moved["sent@b.test"]
    assert (kept.status, kept.language, kept.message_id, kept.attempts) == (
        "SENT",
        "ru",
        "<pricefeed.overdue.900@localhost>",
        1,
    )
    pending = moved["wait@b.test"]
    assert (pending.status, pending.attempts, pending.last_error) == ("PENDING", 2, "451")
    event = OutboxEvent.objects.get(pk=event.pk)
    assert event.payload == {"notification_id": pending.pk}
    assert (event.aggregate_type, event.aggregate_id) == (
        "notifications.notification",
        str(pending.pk),
    )
    # A notification made now takes an id past every old overdue one.
    later = Notification.objects.create(
        kind="import_outcome", price_import=price_import, recipient="n@b.test", outcome="FAILED"
    )
    assert later.pk > 901
