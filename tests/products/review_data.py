"""Data of the review queue's tests, made through the ORM: configs with a current
catalogue (price items made current, as an accepted import leaves them), our products,
what the matching found (LinkCandidate) and the links it proposed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from django.contrib.auth.models import User
from django.utils import timezone

from mailboxes.models import Mailbox
from pricefeed.models import PriceImport, PriceItem, PriceListConfig, item_key
from products.models import LinkCandidate, Product, SupplierLink
from tests.factories import create_config, create_message


@dataclass(frozen=True)
class Row:
    sku: str
    name: str
    brand: str = ""
    article: str = ""
    barcodes: Sequence[str] = ()
    price: Decimal = Decimal("10.00")


def current_catalogue(config: PriceListConfig, rows: Sequence[Row]) -> PriceImport:
    """An accepted import of ``config`` whose rows are its current catalogue."""
    message = create_message(config.mailbox)
    now = timezone.now()
    price_import = PriceImport.objects.create(
        message=message,
        config=config,
        attachment_key="0",
        filename="прайс.xlsx",
        status=PriceImport.Status.SUCCEEDED,
        rows_total=len(rows),
        rows_ok=len(rows),
        accepted_at=now,
    )
    PriceItem.objects.bulk_create(
        PriceItem(
            id=item_key(price_import.pk, n),
            price_import=price_import,
            row_number=n,
            sku=row.sku,
            name=row.name,
            brand=row.brand,
            article=row.article,
            barcodes=list(row.barcodes),
            price=row.price,
            currency="RUB",
            quantity=Decimal(5),
            config=config,
            valid_from=now,
        )
        for n, row in enumerate(rows, start=1)
    )
    return price_import


def product(own_code: str, name: str, **fields: object) -> Product:
    return Product.objects.create(own_code=own_code, name=name, **fields)


def candidate(
    config: PriceListConfig,
    sku: str,
    found: Product,
    *,
    rank: int = 1,
    score: str = "0.800",
    kind: str = SupplierLink.Kind.NAME,
    matched: list | None = None,
    differed: list | None = None,
) -> LinkCandidate:
    return LinkCandidate.objects.create(
        config=config,
        supplier_sku=sku,
        product=found,
        kind=kind,
        score=Decimal(score),
        rank=rank,
        matched=matched or [],
        differed=differed or [],
    )


def proposal(
    config: PriceListConfig,
    sku: str,
    proposed: Product,
    *,
    kind: str = SupplierLink.Kind.ARTICLE,
    confidence: str = "0.900",
) -> SupplierLink:
    return SupplierLink.objects.create(
        config=config,
        supplier_sku=sku,
        product=proposed,
        kind=kind,
        confidence=Decimal(confidence),
        state=SupplierLink.State.PROPOSED,
    )


@dataclass
class Queue:
    """Two configs' catalogues with lines of every kind the queue shows and hides."""

    north: PriceListConfig
    south: PriceListConfig
    products: dict[str, Product] = field(default_factory=dict)
    links: dict[str, SupplierLink] = field(default_factory=dict)


def two_suppliers(mailbox: Mailbox) -> Queue:
    """North: N-1 proposed (bolt M8x40, by article), N-2 proposed (nut), N-3 unlinked
    with two candidates (washer), N-4 linked automatically (screw), N-5 unlinked with no
    candidate (a drill we do not carry). South: S-1 proposed (the same bolt), S-2
    unlinked."""
    north = create_config(mailbox, name="Север", sender_pattern="*@north.test")
    south = create_config(mailbox, name="Юг", sender_pattern="*@south.test")
    current_catalogue(
        north,
        [
            Row("N-1", "Болт М8х40 оцинк.", "Крепыш", "DIN933-M8x40", ("4601234567893",)),
            Row("N-2", "Гайка М8", "Крепыш", "DIN934-M8"),
            Row("N-3", "Шайба 8 плоская", "Крепыш", "DIN125-8"),
            Row("N-4", "Саморез 4,2х19", "Крепыш", "SR-4219"),
            Row("N-5", "Сверло по бетону 6х110", "Бурмаш", "SB-6110"),
        ],
    )
    current_catalogue(
        south,
        [
            Row("S-1", "Болт M8*40 цинк", "KREPYSH", "DIN 933 M8X40"),
            Row("S-2", "Шайба гровер 8", "Крепыш", "DIN127-8"),
        ],
    )
    products = {
        "bolt": product("П-0001", "Болт М8х40", brand="Крепыш", article="DIN933-M8x40",
                        barcodes=["4601234567893"], unit="шт"),
        "bolt50": product("П-0002", "Болт М8х50", brand="Крепыш", article="DIN933-M8x50"),
        "nut": product("П-0003", "Гайка М8", brand="Крепыш", article="DIN934-M8", unit="шт"),
        "washer": product("П-0004", "Шайба 8", brand="Крепыш", article="DIN125-8", unit="шт"),
        "grower": product("П-0005", "Шайба гровер 8", brand="Крепыш", article="DIN127-8"),
        "screw": product("П-0006", "Саморез 4,2х19", brand="Крепыш", article="SR-4219"),
    }  # fmt: skip
    links = {
        "N-1": proposal(north, "N-1", products["bolt"]),
        "N-2": proposal(north, "N-2", products["nut"], kind=SupplierLink.Kind.NAME),
        "S-1": proposal(south, "S-1", products["bolt"]),
        "N-4": SupplierLink.objects.create(
            config=north,
            supplier_sku="N-4",
            product=products["screw"],
            kind=SupplierLink.Kind.ARTICLE,
            confidence=Decimal("0.990"),
            state=SupplierLink.State.AUTO,
        ),
    }
    candidate(
        north,
        "N-1",
        products["bolt"],
        rank=1,
        score="0.950",
        kind="article",
        matched=[{"attribute": "article", "line": "DIN933-M8x40", "product": "DIN933-M8x40"}],
    )
    candidate(
        north,
        "N-1",
        products["bolt50"],
        rank=2,
        score="0.850",
        differed=[{"attribute": "size", "line": "M8x40", "product": "M8x50"}],
    )
    candidate(north, "N-3", products["washer"], rank=1, score="0.700")
    candidate(
        north,
        "N-3",
        products["grower"],
        rank=2,
        score="0.600",
        differed=[{"attribute": "name", "line": "плоская", "product": "гровер"}],
    )
    candidate(south, "S-2", products["grower"], rank=1, score="0.750")
    return Queue(north=north, south=south, products=products, links=links)


def review_trouble() -> None:
    """What the review queue's pages need in the admin's Russian crawl
    (tests/deploy/test_admin_russian_browser.py): our product, a supplier line's link to
    it proposed and then decided (with its history), and a candidate with what matched
    and what differed, for the first config's current lines. Cyrillic data only: the
    crawl flags Latin words."""
    from products import review

    config = PriceListConfig.objects.order_by("pk").first()
    assert config is not None
    if not PriceItem.objects.filter(config=config, valid_to__isnull=True).exists():
        current_catalogue(config, [Row("A-1", "Болт М8"), Row("A-2", "Гайка М8")])
    bolt = product("П-1", "Болт М8", brand="Крепыш", article="933-8", unit="шт")
    nut = product("П-2", "Гайка М8", brand="Крепыш", article="934-8", unit="шт")
    skus = list(
        PriceItem.objects.filter(config=config, valid_from__isnull=False, valid_to__isnull=True)
        .order_by("sku")
        .values_list("sku", flat=True)[:2]
    )
    proposal(config, skus[0], bolt)
    user = User.objects.filter(is_superuser=True).first()
    review.link_confirm(
        line=review.Line(config_id=config.pk, sku=skus[0]), product_id=bolt.pk, user=user
    )
    if len(skus) > 1:
        proposal(config, skus[1], nut, kind=SupplierLink.Kind.NAME)
        candidate(
            config,
            skus[1],
            nut,
            matched=[{"attribute": "brand", "line": "Крепыш", "product": "Крепыш"}],
            differed=[{"attribute": "size", "line": "М8", "product": "М10"}],
        )
