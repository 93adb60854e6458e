"""Outbox handlers of the pricing app: offers and prices follow the links and the lists
(``links.changed``, published by products when a list was matched or a person changed a
link), our products' categories and brands (``products.changed``) and the rules, terms
and rates (``pricing.refresh``). Run by a django-q2 worker after the change committed;
running one twice changes nothing."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils.translation import gettext_lazy as _

from outbox.handlers import handler
from outbox.models import OutboxEvent
from products.events import LINKS_CHANGED, PRODUCTS_CHANGED

from . import offers


@handler(LINKS_CHANGED, label=_("links changed: recompute offers and prices"))
def links_changed(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    results: dict[uuid.UUID, BaseException | None] = {}
    configs = {e.payload["config_id"] for e in events if e.payload.get("config_id")}
    products = {p for e in events for p in e.payload.get("product_ids") or ()}
    try:
        for config_id in sorted(configs):
            offers.config_offers_refresh(config_id)
        if products:
            offers.offers_refresh(products)
    except Exception as exc:
        return {event.id: exc for event in events}
    for event in events:
        results[event.id] = None
    return results


@handler(PRODUCTS_CHANGED, label=_("products' category or brand changed: recompute their prices"))
def products_changed(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Each event's products (up to products.events.PRODUCTS_PER_EVENT) in a transaction
    of their own: those with an offering link, an offer or a price (the others have
    nothing to price)."""
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            offers.offers_refresh(offers.priced(event.payload.get("product_ids") or ()))
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results


@handler(offers.REFRESH, label=_("rules, terms or rates changed: recompute every price"))
def refresh_all(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """The requests of a batch answered by one refresh of everything, in parts."""
    try:
        with transaction.atomic():
            offers.parts_publish()
    except Exception as exc:
        return {event.id: exc for event in events}
    return {event.id: None for event in events}


@handler(offers.REFRESH_PART, label=_("recompute a part of every price"))
def refresh_part(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    results: dict[uuid.UUID, BaseException | None] = {}
    for event in events:
        try:
            offers.part_refresh(event.payload["first"], event.payload["last"])
            results[event.id] = None
        except Exception as exc:
            results[event.id] = exc
    return results
