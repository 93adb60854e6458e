"""The outbox handler of the feeds app: a customer group's list of one published version
mailed (feeds.customer_lists). Running it twice mails nothing twice."""

from __future__ import annotations

import uuid

from django.utils.translation import gettext_lazy as _

from outbox.handlers import handler
from outbox.models import OutboxEvent

from .customer_lists import EVENT, customer_list_deliver


@handler(EVENT, label=_("a customer price list mailed"))
def customer_list(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            customer_list_deliver(
                group_id=int(event.payload["group_id"]), version=int(event.payload["version"])
            )
        except Exception as exc:
            results[event.id] = exc
        else:
            results[event.id] = None
    return results
