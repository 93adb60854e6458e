"""The events products publishes for what reads them (pricing's offers and prices):
``links.changed`` with the config whose list was matched, or the products a person's
decision touched; ``products.changed`` with the products whose category or brand
changed (the price rules go by them)."""

from __future__ import annotations

from collections.abc import Iterable

from outbox.services import publish
from pricefeed.models import PriceListConfig

from .models import Product

LINKS_CHANGED = "links.changed"
PRODUCTS_CHANGED = "products.changed"
# Products named by one event at most (pricing recomputes a products.changed event's
# products as one transaction; a batch of links.changed events' products together).
PRODUCTS_PER_EVENT = 10_000


def config_links_changed(config_id: int, import_id: int | None) -> None:
    """A config's list was matched: its products' offers may all have changed."""
    publish(
        LINKS_CHANGED,
        PriceListConfig(pk=config_id),
        {"config_id": config_id, "import_id": import_id},
    )


def _publish_products(event_type: str, product_ids: Iterable[int | None]) -> None:
    """``event_type`` naming these products, PRODUCTS_PER_EVENT at most per event, in
    product order (in the caller's transaction)."""
    wanted = sorted({p for p in product_ids if p is not None})
    for start in range(0, len(wanted), PRODUCTS_PER_EVENT):
        chunk = wanted[start : start + PRODUCTS_PER_EVENT]
        publish(event_type, Product(pk=chunk[0]), {"product_ids": chunk})


def product_links_changed(product_ids: Iterable[int | None]) -> None:
    """Links of these products were made, changed or rejected (in the caller's
    transaction)."""
    _publish_products(LINKS_CHANGED, product_ids)


def products_changed(product_ids: Iterable[int]) -> None:
    """The category or brand of these products changed (in the caller's transaction):
    the price rules that apply to them may be others now."""
    _publish_products(PRODUCTS_CHANGED, product_ids)
