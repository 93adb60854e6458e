"""Outbox handlers of the products app: an import made current is matched to our
products (products.linking) by a django-q2 worker, after the import's transaction
committed. Running it twice for one import changes nothing."""

from __future__ import annotations

import uuid

from django.utils.translation import gettext_lazy as _

from outbox.handlers import handler
from outbox.models import OutboxEvent
from pricefeed.catalogue import ACCEPTED_EVENT

from . import linking


@handler(ACCEPTED_EVENT, label=_("import accepted: link its lines to our products"))
def match_import(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            linking.import_links_match(event.payload["import_id"])
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results
