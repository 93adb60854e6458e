"""Supplier lines and products for the matching tests, stored the way pricefeed and
products_load store them: the lines as a config's current catalogue (PriceItem rows of
an accepted import, valid_from set, valid_to empty)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.utils import timezone

from pricefeed.models import PriceImport, PriceItem, PriceListConfig, item_key
from products.models import Product
from tests import factories


def products(rows: Iterable[Sequence]) -> list[Product]:
    """Products from (own_code, name, brand, article, barcodes) rows."""
    return Product.objects.bulk_create(
        Product(own_code=o, name=n, brand=b, article=a, barcodes=list(bc))
        for o, n, b, a, bc in rows
    )


def accepted_import(config: PriceListConfig, lines: Iterable[Sequence]) -> PriceImport:
    """An accepted import of ``config`` whose (sku, name, brand, article, barcodes) lines
    become the current catalogue: the entries of the SKUs it lists are replaced."""
    message = factories.create_message(config.mailbox)
    now = timezone.now()
    price_import = PriceImport.objects.create(
        message=message,
        config=config,
        attachment_key="k",
        status=PriceImport.Status.SUCCEEDED,
        accepted_at=now,
    )
    rows = list(lines)
    skus = [row[0] for row in rows]
    PriceItem.objects.filter(
        config=config, sku__in=skus, valid_from__isnull=False, valid_to__isnull=True
    ).update(valid_to=now, ended_by=price_import)
    PriceItem.objects.bulk_create(
        PriceItem(
            id=item_key(price_import.pk, n),
            price_import=price_import,
            row_number=n,
            sku=sku,
            name=name,
            brand=brand,
            article=article,
            barcodes=list(barcodes),
            config=config,
            valid_from=now,
        )
        for n, (sku, name, brand, article, barcodes) in enumerate(rows, start=1)
    )
    return price_import
