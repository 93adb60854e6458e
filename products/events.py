"""The event products publishes when links change, for what reads them (pricing's
offers): ``links.changed`` with the config whose list was matched, or the products a
person's decision touched."""

from __future__ import annotations

from collections.abc import Iterable

from outbox.services import publish
from pricefeed.models import PriceListConfig

from .models import Product

LINKS_CHANGED = "links.changed"


def config_links_changed(config_id: int, import_id: int | None) -> None:
    """A config's list was matched: its products' offers may all have changed."""
    publish(
        LINKS_CHANGED,
        PriceListConfig(pk=config_id),
        {"config_id": config_id, "import_id": import_id},
    )


def product_links_changed(product_ids: Iterable[int | None]) -> None:
    """Links of these products were made, changed or rejected (in the caller's
    transaction)."""
    wanted = sorted({p for p in product_ids if p is not None})
    if wanted:
        publish(LINKS_CHANGED, Product(pk=wanted[0]), {"product_ids": wanted})
