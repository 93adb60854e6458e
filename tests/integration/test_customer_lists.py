"""Customer price lists through a real SMTP server: the sweep publishes one event per
(group, published version) when the group's moment has come; its handler mails the file
once per (group, recipient, version), whatever replays, second sweeps or failures."""

from __future__ import annotations

import csv
import io
import smtplib
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from email import message_from_bytes, policy
from pathlib import Path

import pytest
from openpyxl import load_workbook

from core import metrics
from feeds.customer_lists import (
    EVENT,
    MOSCOW,
    MailingBusy,
    customer_list_deliver,
    customer_lists_sweep,
    latest_slot,
)
from feeds.handlers import customer_list
from feeds.models import CustomerGroup, CustomerListRun, CustomerMailing
from outbox.models import OutboxEvent
from pricing.models import PublishedVersion
from tests.feeds.conftest import make_products

from .support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

EVERY_DAY = [1, 2, 3, 4, 5, 6, 7]


@pytest.fixture
def smtp(settings, smtp_server):
    def start(*args: str) -> Path:
        port, path = smtp_server(*args)
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.DEFAULT_FROM_EMAIL = "prices@seller.test"
        return path

    return start


def received(path: Path) -> list:
    new = path / "new"
    if not new.exists():
        return []
    return [
        message_from_bytes(f.read_bytes(), policy=policy.default) for f in sorted(new.iterdir())
    ]


def events() -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(kind=EVENT).order_by("created_at", "id"))


def attachment(message) -> tuple[str, bytes]:
    part = next(message.iter_attachments())
    return part.get_filename(), part.get_payload(decode=True)


def group(**fields) -> CustomerGroup:
    defaults = {
        "name": "Опт",
        "adjustment_percent": Decimal("-5"),
        "format": CustomerGroup.Format.CSV,
        "recipients": "a@buyer.test, B@buyer.test\nb@buyer.test",
        "days": EVERY_DAY,
        "time": time(0, 0),
    }
    return CustomerGroup.objects.create(**(defaults | fields))


def test_a_due_list_is_mailed_once_per_recipient_and_version(smtp):
    path = smtp()
    make_products()
    g = group()

    assert customer_lists_sweep() == 1
    assert customer_lists_sweep() == 0  # the moment is served
    [event] = events()
    assert event.payload == {"group_id": g.pk, "version": 5}
    assert customer_list([event]) == {event.id: None}

    mails = received(path)
    assert sorted(m["To"] for m in mails) == ["a@buyer.test", "b@buyer.test"]
    mailings = {m.recipient: m for m in CustomerMailing.objects.all()}
    assert set(mailings) == {"a@buyer.test", "b@buyer.test"}
    for mail in mails:
        mailing = mailings[mail["To"]]
        assert mailing.status == CustomerMailing.Status.SENT
        assert mail["Message-ID"] == f"<customer-list.{mailing.pk}@seller.test>"
        assert mailing.message_id == mail["Message-ID"]
        name, data = attachment(mail)
        assert name.endswith(".csv")
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig")), delimiter=";"))
        prices = {row[0]: row[7] for row in rows[1:]}
        assert prices == {"A-1": "117.28", "A-2": "9.50", "A-3": "0.94"}

    # The event replayed (the outbox delivers at least once): nothing is sent again.
    assert customer_list([event]) == {event.id: None}
    assert len(received(path)) == 2


def test_an_unchanged_version_is_not_mailed_again_and_a_new_one_is(smtp):
    path = smtp()
    make_products()
    g = group(format=CustomerGroup.Format.XLSX, recipients="a@buyer.test")
    customer_lists_sweep()
    customer_list(events())
    assert len(received(path)) == 1

    # The next scheduled moment comes with the same published version: nothing is due.
    CustomerGroup.objects.filter(pk=g.pk).update(served_until=datetime(2000, 1, 1, tzinfo=MOSCOW))
    assert customer_lists_sweep() == 0
    assert len(events()) == 1

    PublishedVersion.objects.filter(pk=1).update(number=6)
    CustomerGroup.objects.filter(pk=g.pk).update(served_until=datetime(2000, 1, 1, tzinfo=MOSCOW))
    assert customer_lists_sweep() == 1
    customer_list(events())
    mails = received(path)
    assert len(mails) == 2
    assert sorted(CustomerListRun.objects.values_list("version", flat=True)) == [5, 6]
    name, data = attachment(mails[-1])
    assert name.endswith(".xlsx")
    sheet = load_workbook(io.BytesIO(data), read_only=True).active
    assert [row[0] for row in sheet.iter_rows(values_only=True)] == [
        "own_code",
        "A-1",
        "A-2",
        "A-3",
    ]


def test_a_refused_recipient_stays_pending_and_a_retry_sends_nothing_twice(smtp):
    path = smtp("--reject-rcpt", "b@buyer.test")
    make_products()
    g = group()
    customer_lists_sweep()
    [event] = events()
    errors = metrics.CUSTOMER_LIST_SEND_ERRORS._value.get()

    result = customer_list([event])
    assert result[event.id] is not None  # the outbox retries the event
    assert [m["To"] for m in received(path)] == ["a@buyer.test"]
    refused = CustomerMailing.objects.get(recipient="b@buyer.test")
    assert refused.status == CustomerMailing.Status.PENDING
    assert refused.attempts == 1 and "550" in refused.last_error
    assert metrics.CUSTOMER_LIST_SEND_ERRORS._value.get() == errors + 1

    with pytest.raises(smtplib.SMTPRecipientsRefused):
        customer_list_deliver(group_id=g.pk, version=5)
    assert [m["To"] for m in received(path)] == ["a@buyer.test"]
    assert CustomerMailing.objects.get(recipient="b@buyer.test").attempts == 2


def test_a_switched_off_group_or_one_without_days_is_never_due(smtp):
    smtp()
    make_products()
    group(name="выкл", enabled=False)
    group(name="без дней", days=[])
    assert customer_lists_sweep() == 0
    assert events() == []


@pytest.mark.parametrize(
    "now, expected",
    [
        # Friday 2026-12-04 08:00 Moscow: the group's time (09:00) has not come today;
        # its last moment was Wednesday's.
        (datetime(2026, 12, 4, 8, 0, tzinfo=MOSCOW), datetime(2026, 12, 2, 9, 0, tzinfo=MOSCOW)),
        (datetime(2026, 12, 4, 9, 0, tzinfo=MOSCOW), datetime(2026, 12, 4, 9, 0, tzinfo=MOSCOW)),
        # UTC 06:30 is 09:30 in Moscow.
        (datetime(2026, 12, 4, 6, 30, tzinfo=UTC), datetime(2026, 12, 4, 9, 0, tzinfo=MOSCOW)),
    ],
)
def test_the_latest_scheduled_moment_is_in_moscow_time(now, expected):
    g = CustomerGroup(days=[3, 5], time=time(9, 0))  # Wednesdays and Fridays at 09:00
    assert latest_slot(g, now) == expected
    assert latest_slot(CustomerGroup(days=[], time=time(9, 0)), now) is None
    assert latest_slot(g, now) <= now
    assert now - latest_slot(g, now) < timedelta(days=7)


# listen_mail (its supervisor's sweeps) -> dispatch_outbox -> qcluster -> SMTP: real
# processes throughout.
def test_real_processes_mail_a_due_list_once_to_each_recipient(manage, smtp_server):
    port, path = smtp_server()
    make_products()
    group()
    env = {"EMAIL_URL": f"smtp://127.0.0.1:{port}", "DEFAULT_FROM_EMAIL": "prices@seller.test"}
    manage("listen_mail")
    manage("qcluster", env=env)
    manage("dispatch_outbox", env=env)

    wait_until(
        lambda: (
            len(received(path)) == 2
            and set(CustomerMailing.objects.values_list("status", flat=True))
            == {CustomerMailing.Status.SENT}
            and set(OutboxEvent.objects.filter(kind=EVENT).values_list("status", flat=True))
            == {OutboxEvent.Status.SENT}
        ),
        60,
        "the list mailed to both recipients and recorded",
    )
    mails = received(path)
    assert sorted(m["To"] for m in mails) == ["a@buyer.test", "b@buyer.test"]
    assert {m["Message-ID"] for m in mails} == set(
        CustomerMailing.objects.values_list("message_id", flat=True)
    )
    assert OutboxEvent.objects.filter(kind=EVENT).count() == 1


def test_a_mail_another_worker_is_sending_is_left_to_it_until_its_claim_expires(smtp):
    path = smtp()
    make_products()
    g = group(recipients="a@buyer.test")
    customer_lists_sweep()
    [event] = events()
    CustomerMailing.objects.create(
        group=g, recipient="a@buyer.test", version=5, claimed_at=datetime.now(UTC)
    )

    with pytest.raises(MailingBusy):
        customer_list_deliver(group_id=g.pk, version=5)
    assert received(path) == []

    CustomerMailing.objects.update(claimed_at=datetime(2000, 1, 1, tzinfo=UTC))
    assert customer_list([event]) == {event.id: None}
    assert [m["To"] for m in received(path)] == ["a@buyer.test"]
    assert CustomerMailing.objects.get().status == CustomerMailing.Status.SENT
