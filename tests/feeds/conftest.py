from __future__ import annotations

from decimal import Decimal

import pytest

from feeds.models import Feed
from feeds.tokens import feed_token_renew
from pricing.models import ProductPrice, PublishedVersion
from products.models import Product

# Names a feed must carry through intact: markup, entities, quotes, Cyrillic, the
# whitespace XML keeps, and control characters XML 1.0 forbids (dropped).
HOSTILE = "Болт <M8> & \"гайка\" 'шайба' \\ tab\tline\nend\x01\x08\x0b\x1f\ufffe"
HOSTILE_CLEAN = "Болт <M8> & \"гайка\" 'шайба' \\ tab\tline\nend"


def make_products() -> list[Product]:
    rows = [
        (
            "A-1",
            HOSTILE,
            "Bosch & Co <pro>",
            "ART-1",
            ["4600000000008", "4600000000015"],
            "шт",
            "Крепёж / Болты",
            Decimal("123.45"),
            True,
            Decimal("7"),
        ),
        ("A-2", "Гайка М8", "", "", [], "", "", Decimal("10.00"), False, None),
        (
            "A-3",
            "Шайба 8",
            "Ёлка",
            "Ш-8",
            ["4600000000022"],
            "упак",
            "Крепёж / Шайбы",
            Decimal("0.99"),
            True,
            Decimal("2.5"),
        ),
    ]
    products = []
    for code, name, brand, article, barcodes, unit, category, price, available, qty in rows:
        product = Product.objects.create(
            own_code=code,
            name=name,
            brand=brand,
            article=article,
            barcodes=barcodes,
            unit=unit,
            category=category,
        )
        ProductPrice.objects.create(
            product=product,
            status=ProductPrice.Status.PUBLISHED,
            price=price,
            available=available,
            quantity=qty,
        )
        products.append(product)
    # Not published: retired, and one without a price yet.
    retired = Product.objects.create(own_code="R-1", name="Снят", retired_at="2026-01-01T00:00Z")
    ProductPrice.objects.create(product=retired, status="published", price=Decimal(1))
    unpriced = Product.objects.create(own_code="N-1", name="Без цены")
    ProductPrice.objects.create(product=unpriced, status="no_offer", price=None)
    PublishedVersion.objects.update_or_create(pk=1, defaults={"number": 5})
    return products


@pytest.fixture
def catalogue(db):
    return make_products()


@pytest.fixture
def make_feed(db):
    def make(format: str, **fields) -> tuple[Feed, str]:
        feed = Feed.objects.create(
            name=fields.pop("name", f"Фид {format}"), format=format, **fields
        )
        return feed, feed_token_renew(feed)

    return make
