"""Who may retry, requeue or give up outbox events: each role's group, and a staff user
in none. A refused action is neither offered nor run when POSTed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from access.roles import OPERATOR
from outbox import services
from outbox.handlers import NOOP
from outbox.models import OutboxEvent
from tests.access.support import at_least, each_role, logged_in, offered, run_action

pytestmark = pytest.mark.django_db

Status = OutboxEvent.Status
EVENTS = reverse("admin:outbox_outboxevent_changelist")


@pytest.fixture
def event(mailbox) -> OutboxEvent:
    with transaction.atomic():
        return services.publish(NOOP, mailbox, {"n": 1})


@each_role
def test_retry_now_is_an_operators(client, role, event):
    later = timezone.now() + timedelta(hours=1)
    OutboxEvent.objects.filter(id=event.id).update(next_attempt_at=later, attempts=2)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("retry_now" in offered(client, EVENTS)) == allowed
    run_action(client, EVENTS, "retry_now", event.id)

    event.refresh_from_db()
    assert (event.next_attempt_at < later) is allowed


@each_role
def test_requeue_is_an_operators(client, role, event):
    OutboxEvent.objects.filter(id=event.id).update(status=Status.FAILED, attempts=8)
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("requeue" in offered(client, EVENTS)) == allowed
    run_action(client, EVENTS, "requeue", event.id)

    event.refresh_from_db()
    assert event.status == (Status.NEW if allowed else Status.FAILED)


@each_role
def test_mark_failed_is_an_operators(client, role, event):
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("mark_failed" in offered(client, EVENTS)) == allowed
    run_action(client, EVENTS, "mark_failed", event.id)

    event.refresh_from_db()
    assert event.status == (Status.FAILED if allowed else Status.NEW)
