"""Sending notifications (the handler of notification.send events), in process."""

from __future__ import annotations

import re
import smtplib

import pytest
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend
from django.db import transaction

from notifications import services
from notifications.models import Notification, Subscription
from outbox import services as outbox_services
from outbox.models import OutboxEvent
from pricefeed.catalogue import ACCEPTED_EVENT
from pricefeed.imports.outcome import FINISHED_EVENT
from pricefeed.models import PriceImport
from tests.factories import receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")


class RejectingBackend(LocmemBackend):
    """locmem, but refuses mail to addresses starting with "bad" like a server's 550."""

    def send_messages(self, messages):
        for message in messages:
            if any(r.startswith("bad") for r in message.to):
                raise smtplib.SMTPRecipientsRefused({message.to[0]: (550, b"no such user")})
        return super().send_messages(messages)


@pytest.fixture
def price_import(mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.csv", b"sku;price\nA-1;1\nA-2;x\n")]))
    return PriceImport.objects.select_related("config", "message").get(pk=price_import.pk)


def _notifications(price_import, recipients):
    notifications = Notification.objects.bulk_create(
        [
            Notification(
                kind="import_outcome",
                price_import=price_import,
                recipient=r,
                outcome=price_import.status,
            )
            for r in recipients
        ]
    )
    with transaction.atomic():
        for n in notifications:
            outbox_services.publish(services.SEND_EVENT, n, {"notification_id": n.pk})
    return notifications


def _claimed_events():
    """The send events, claimed (the import's own outcome event is left aside)."""
    ids = outbox_services.events_claim(dispatcher="d", limit=1000)
    events = outbox_services.events_claimed(event_ids=ids, dispatcher="d")
    return [event for event in events if event.kind == services.SEND_EVENT]


def _normalised(data: bytes) -> bytes:
    """The same mail whatever its MIME boundary and Date."""
    boundary = re.search(rb'boundary="([^"]+)"', data).group(1)
    data = data.replace(boundary, b"BOUNDARY")
    return re.sub(rb"\r\nDate: [^\r]*", b"\r\nDate: D", data)


@pytest.mark.parametrize(
    "recipient",
    ["buyer@buyer.test", "Buyer.With.A.Rather.Long.Name.Of.Many.Parts@purchasing.example.test"],
)
def test_a_prepared_outcome_mail_is_byte_for_byte_what_django_builds(price_import, recipient):
    (notification,) = Notification.objects.bulk_create(
        [
            Notification(
                kind="import_outcome",
                price_import=price_import,
                recipient=recipient,
                outcome="PARTIAL",
            )
        ]
    )
    notification = Notification.objects.select_related(
        "price_import__config", "price_import__message"
    ).get(pk=notification.pk)
    reference = services.build_email(notification).message().as_bytes(linesep="\r\n")
    fast = services.OutcomeMail(notification.price_import).data(
        recipient=recipient, message_id=services.message_id_for(notification)
    )
    assert _normalised(fast) == _normalised(reference)
    assert f"\r\nTo: {recipient}\r\n".encode() in fast
    assert f"Message-ID: {services.message_id_for(notification)}".encode() in fast


def test_a_recipient_with_a_line_break_is_refused_and_nothing_is_sent(price_import, mailoutbox):
    (bad,) = _notifications(price_import, ["x@buyer.test\r\nBcc: victim@example.test"])
    (event,) = _claimed_events()
    results = services.notifications_send([event])
    assert "BadHeaderError" in type(results[event.id]).__name__
    assert mailoutbox == []
    bad.refresh_from_db()
    assert (bad.status, bad.attempts) == (Notification.Status.PENDING, 1)


def test_a_batch_is_sent_once_each_and_marked_sent_with_its_message_ids(
    price_import, mailoutbox, django_assert_max_num_queries
):
    recipients = [f"buyer{i:02d}@buyer.test" for i in range(45)]
    notifications = _notifications(price_import, recipients)
    events = _claimed_events()
    # Loading, rendering, sending and marking 45 mails: the same few statements as for one
    # (the marking UPDATE and the attempts' INSERT in one transaction: a savepoint here).
    with django_assert_max_num_queries(6):
        results = services.notifications_send(events)
    assert results == {event.id: None for event in events}
    assert sorted(m.to[0] for m in mailoutbox) == recipients
    expected = {services.message_id_for(n) for n in notifications}
    assert {m.extra_headers["Message-ID"] for m in mailoutbox} == expected
    assert all(m.message().as_bytes().count(b"Message-ID:") == 1 for m in mailoutbox)
    rows = Notification.objects.all()
    assert {(n.status, n.attempts, n.last_error) for n in rows} == {
        (Notification.Status.SENT, 1, "")
    }
    assert {n.message_id for n in rows} == expected
    assert all(n.sent_at for n in rows)


def test_a_sent_notification_is_never_sent_again(price_import, mailoutbox):
    _notifications(price_import, ["a@buyer.test", "b@buyer.test"])
    events = _claimed_events()
    services.notifications_send(events)
    assert len(mailoutbox) == 2
    # The same events delivered again (a retried task): nothing goes out.
    assert services.notifications_send(events) == {event.id: None for event in events}
    assert len(mailoutbox) == 2
    assert set(Notification.objects.values_list("attempts", flat=True)) == {1}


def test_a_refused_mail_is_recorded_on_its_notification_and_the_others_go_out(
    price_import, mailoutbox, settings
):
    settings.EMAIL_BACKEND = f"{__name__}.RejectingBackend"
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    recipients = [f"good{i:02d}@buyer.test" for i in range(30)] + ["bad@buyer.test"]
    _notifications(price_import, recipients)
    events = _claimed_events()
    results = services.notifications_send(events)
    failed = {e.id for e in events if results[e.id] is not None}
    assert len(failed) == 1
    assert len(mail.outbox) == 30
    bad = Notification.objects.get(recipient="bad@buyer.test")
    # The last attempt: FAILED, with the server's answer.
    assert bad.status == Notification.Status.FAILED
    assert "550" in bad.last_error
    assert Notification.objects.filter(status=Notification.Status.SENT).count() == 30


def test_events_delivered_by_the_task_with_string_ids_are_sent_and_marked(price_import, mailoutbox):
    _notifications(price_import, ["a@buyer.test", "b@buyer.test"])
    OutboxEvent.objects.exclude(kind=services.SEND_EVENT).delete()
    ids = outbox_services.events_claim(dispatcher="d", limit=10)
    # django-q2 hands the ids over as strings.
    counts = outbox_services.events_deliver(event_ids=[str(i) for i in ids], dispatcher="d")
    assert counts == {"sent": 2, "retry": 0, "failed": 0}
    assert len(mailoutbox) == 2
    assert set(OutboxEvent.objects.values_list("status", flat=True)) == {OutboxEvent.Status.SENT}


def test_a_fan_out_run_twice_gives_each_notification_one_send_event(price_import):
    from notifications.models import Subscription

    Subscription.objects.create(email="ops@buyer.test")
    Subscription.objects.create(email="buyer@buyer.test")
    assert services.notifications_fan_out(import_id=price_import.pk) == 2
    # The outcome event retried after the fan-out committed: no second send event.
    assert services.notifications_fan_out(import_id=price_import.pk) == 0
    events = OutboxEvent.objects.filter(kind=services.SEND_EVENT)
    assert sorted(events.values_list("aggregate_id", flat=True)) == sorted(
        str(pk) for pk in Notification.objects.values_list("pk", flat=True)
    )


# -- a message with many price lists: one mail per recipient ------------------------------


def _deliver_everything() -> None:
    """Runs the outbox as dispatch_outbox would, until nothing is due."""
    while ids := outbox_services.events_claim(dispatcher="d", limit=100):
        outbox_services.events_deliver(event_ids=ids, dispatcher="d")


def test_a_message_with_many_price_lists_makes_one_mail_per_recipient(mailbox, config, mailoutbox):
    Subscription.objects.create(email="ops@buyer.test")
    Subscription.objects.create(email="buyer@buyer.test", on_succeeded=False, on_partial=False)
    files = [(f"p{i:02d}.csv", b"sku;price\nA-1;1\n") for i in range(19)]
    imports = run_all(receive(mailbox, [*files, ("bad.pdf", b"%PDF-1.7 not a price list")]))
    assert len(imports) == 20

    _deliver_everything()

    mails = {m.to[0]: m for m in mailoutbox}
    assert sorted(mails) == ["buyer@buyer.test", "ops@buyer.test"]
    digest = mails["ops@buyer.test"]
    assert digest.subject == "[pricefeed] 20 price lists: 19 succeeded, 1 failed"
    assert all(f'"p{i:02d}.csv"' in digest.body for i in range(19))
    assert '"bad.pdf"' in digest.body and "unsupported format" in digest.body
    assert "bad.pdf" in digest.alternatives[0][0]
    # One notification per import, recipient and outcome, all delivered by the one mail.
    ops = Notification.objects.filter(recipient="ops@buyer.test")
    assert ops.count() == 20
    assert set(ops.values_list("status", "message_id")) == {
        (Notification.Status.SENT, digest.extra_headers["Message-ID"])
    }
    # Only the failure is wanted by the buyer: the mail about that one import, as ever.
    (failed,) = Notification.objects.filter(recipient="buyer@buyer.test")
    assert (failed.outcome, failed.status) == (PriceImport.Status.FAILED, Notification.Status.SENT)
    assert mails["buyer@buyer.test"].subject.endswith("bad.pdf failed")
    assert mails["buyer@buyer.test"].extra_headers["Message-ID"] == failed.message_id


def test_a_digest_takes_effect_once_whatever_the_retries(mailbox, config, mailoutbox):
    Subscription.objects.create(email="ops@buyer.test")
    message = receive(mailbox, [("a.csv", b"sku;price\nA-1;1\n"), ("b.csv", b"sku;price\nB;2\n")])
    run_all(message)
    # (Each import made current is also announced to the matching, import.accepted, and
    # each finished one to other systems, import.finished.)
    (outcome,) = OutboxEvent.objects.exclude(kind__in=[ACCEPTED_EVENT, FINISHED_EVENT])
    assert services.notifications_fan_out_message(message_id=message.pk) == 1
    # The outcome event retried after its fan-out committed: no second send event.
    assert services.notifications_fan_out_message(message_id=message.pk) == 0
    (send,) = _claimed_events()
    assert len(send.payload["notification_ids"]) == 2

    assert services.notifications_send([send]) == {send.id: None}
    assert services.notifications_send([send]) == {send.id: None}  # delivered again

    assert len(mailoutbox) == 1
    assert set(Notification.objects.values_list("status", "attempts")) == {
        (Notification.Status.SENT, 1)
    }
    assert outcome.kind == "message.imports_finished"


def test_a_refused_digest_is_recorded_on_each_of_its_notifications(
    mailbox, config, mailoutbox, settings
):
    settings.EMAIL_BACKEND = f"{__name__}.RejectingBackend"
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    Subscription.objects.create(email="bad@buyer.test")
    message = receive(mailbox, [("a.csv", b"sku;price\nA-1;1\n"), ("b.csv", b"sku;price\nB;2\n")])
    run_all(message)
    services.notifications_fan_out_message(message_id=message.pk)
    (send,) = _claimed_events()

    results = services.notifications_send([send])

    assert "550" in str(results[send.id])
    assert mail.outbox == []
    assert set(Notification.objects.values_list("status", "attempts")) == {
        (Notification.Status.FAILED, 1)
    }
