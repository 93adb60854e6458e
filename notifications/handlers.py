"""Outbox handlers of the notifications app: the fan-outs. The send events of every kind
are handled by the one send path, registered with the kind (kinds.register) when
``services`` and ``overdue``, which define the kinds, are imported here."""

from __future__ import annotations

import uuid

from django.utils.translation import gettext_lazy as _

from outbox.handlers import handler
from outbox.models import OutboxEvent
from pricefeed.imports.outcome import MESSAGE_OUTCOME_EVENT, OUTCOME_EVENT
from pricefeed.overdue import LIST_OVERDUE_EVENT

from . import overdue, services


@handler(OUTCOME_EVENT, label=_("import finished: notify"))
def fan_out(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            services.notifications_fan_out(import_id=event.payload["import_id"])
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results


@handler(MESSAGE_OUTCOME_EVENT, label=_("message imports finished: notify"))
def fan_out_message(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """The outcomes of a message's imports, announced together: one mail per recipient."""
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            services.notifications_fan_out_message(message_id=event.payload["message_id"])
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results


@handler(LIST_OVERDUE_EVENT, label=_("price list overdue: notify"))
def fan_out_overdue(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """A price list that did not come on time: one mail per subscriber."""
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            overdue.overdue_fan_out(alert_id=event.payload["alert_id"])
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results
