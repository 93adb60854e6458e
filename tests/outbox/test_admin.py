"""Operators in the outbox admin: filters, a readable payload, and the three actions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone, translation

from outbox import services
from outbox.handlers import NOOP
from outbox.models import OutboxEvent

pytestmark = pytest.mark.usefixtures("fast_password_hashing")

Status = OutboxEvent.Status
URL = "admin:outbox_outboxevent_changelist"


@pytest.fixture
def events(mailbox):
    with transaction.atomic():
        new, waiting, failed, old = (
            services.publish(NOOP, mailbox, {"n": i, "text": "прайс"}) for i in range(4)
        )
    later = timezone.now() + timedelta(hours=1)
    OutboxEvent.objects.filter(id=waiting.id).update(next_attempt_at=later, attempts=2)
    OutboxEvent.objects.filter(id=failed.id).update(
        status=Status.FAILED, attempts=8, last_error="SMTP 550"
    )
    OutboxEvent.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(days=3))
    return {"new": new, "waiting": waiting, "failed": failed, "old": old}


def act(client, action, *events):
    return client.post(
        reverse(URL),
        {"action": action, "_selected_action": [str(e.id) for e in events]},
        follow=True,
    )


def test_list_filters_by_status_kind_and_age(admin_client, events):
    by_status = admin_client.get(reverse(URL), {"status__exact": "FAILED"})
    assert list(by_status.context["cl"].result_list) == [
        OutboxEvent.objects.get(id=events["failed"].id)
    ]
    by_kind = admin_client.get(reverse(URL), {"kind": NOOP})
    assert by_kind.context["cl"].result_count == 4
    older = admin_client.get(reverse(URL), {"age": "old1d"})
    assert [e.id for e in older.context["cl"].result_list] == [events["old"].id]


def test_event_page_shows_the_payload_readably(admin_client, events):
    page = admin_client.get(
        reverse("admin:outbox_outboxevent_change", args=[events["new"].id])
    ).content.decode()
    assert "<pre>" in page
    assert "&quot;text&quot;: &quot;прайс&quot;" in page


def test_retry_now_makes_a_waiting_event_due(admin_client, events):
    act(admin_client, "retry_now", events["waiting"], events["failed"])
    waiting = OutboxEvent.objects.get(id=events["waiting"].id)
    assert waiting.next_attempt_at <= timezone.now()
    assert OutboxEvent.objects.get(id=events["failed"].id).status == Status.FAILED


def test_requeue_starts_a_failed_event_over(admin_client, events):
    response = act(admin_client, "requeue", events["failed"], events["new"])
    failed = OutboxEvent.objects.get(id=events["failed"].id)
    assert (failed.status, failed.attempts, failed.last_error) == (Status.NEW, 0, "")
    text = response.content.decode()
    assert "1 event requeued." in text
    assert "1 skipped: not FAILED." in text


def test_mark_failed_gives_up_on_new_events_only(admin_client, admin_user, events):
    OutboxEvent.objects.filter(id=events["old"].id).update(status=Status.PROCESSING)
    act(admin_client, "mark_failed", events["new"], events["old"])
    new = OutboxEvent.objects.get(id=events["new"].id)
    assert (new.status, new.last_error) == (Status.FAILED, f"marked failed by {admin_user}")
    assert OutboxEvent.objects.get(id=events["old"].id).status == Status.PROCESSING


def test_the_event_list_speaks_russian_when_asked(admin_client, events):
    with translation.override("ru"):
        page = admin_client.get(reverse(URL), headers={"accept-language": "ru"})
    text = page.content.decode()
    assert "<h1>Исходящие события</h1>" in text
    assert '<td class="field-status">Ошибка</td>' in text
    assert "Вернуть в очередь события с ошибкой (попытки заново)" in text
    assert "Старше суток" in text
