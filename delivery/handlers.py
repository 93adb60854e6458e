"""Outbox handlers of the delivery app: the fan-out of each delivered kind, and the two
send paths."""

from __future__ import annotations

import uuid

from django.utils.translation import gettext_lazy as _

from outbox.handlers import handler
from outbox.models import OutboxEvent

from . import services
from .kinds import SEND_AMQP, SEND_WEBHOOK, EventKind


def fan_out(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """A batch of one kind fans out in one transaction: all of it, or (an error) none."""
    services.fan_out(events)
    return {event.id: None for event in events}


for _kind in EventKind:
    handler(_kind.value, label=_kind.label)(fan_out)

handler(SEND_WEBHOOK, label=_("sending an event to a webhook"))(services.send_webhooks)
handler(SEND_AMQP, label=_("publishing an event to RabbitMQ"))(services.send_amqp)
