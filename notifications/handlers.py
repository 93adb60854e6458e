"""Outbox handlers of the notifications app."""

from __future__ import annotations

import uuid

from outbox.handlers import handler
from outbox.models import OutboxEvent
from pricefeed.imports.outcome import OUTCOME_EVENT

from . import services


@handler(OUTCOME_EVENT)
def fan_out(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            services.notifications_fan_out(import_id=event.payload["import_id"])
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results


handler(services.SEND_EVENT)(services.notifications_send)
