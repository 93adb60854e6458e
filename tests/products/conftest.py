"""A product of ours with two suppliers' offers (links auto and confirmed), a proposed
one, and a past price in its history."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pytest

from devkit.samples import price_list_csv
from pricefeed.models import PriceImport, PriceListConfig
from products.models import Product, SupplierLink
from tests.factories import create_config, create_mailbox, receive, run_all

Kind, State = SupplierLink.Kind, SupplierLink.State


def send(mailbox, rows) -> PriceImport:
    (price_import,) = run_all(receive(mailbox, [("прайс.csv", price_list_csv(rows))]))
    assert price_import.accepted_at is not None, price_import.last_error
    return price_import


def link(config, sku, product, state=State.AUTO, kind=Kind.BARCODE, confidence="0.990"):
    return SupplierLink.objects.create(
        config=config,
        supplier_sku=sku,
        product=product,
        kind=kind,
        state=state,
        confidence=Decimal(confidence),
    )


@dataclass
class World:
    bolt: Product
    nut: Product
    first: PriceListConfig
    second: PriceListConfig


@pytest.fixture
def world(db, no_queue) -> World:
    bolt = Product.objects.create(
        own_code="P-1", name="Болт М8х40", brand="Bosch", article="A-1",
        barcodes=["4600000000008"], unit="шт", category="Крепёж / Болты",
    )  # fmt: skip
    nut = Product.objects.create(own_code="P-2", name="Гайка М8", brand="Kreps", category="Крепёж")
    first = create_config(create_mailbox(name="first"), name="Ромашка")
    second = create_config(create_mailbox(name="second"), name="Василёк")
    send(first.mailbox, [("R-1", "Болт 8х40", Decimal("12.50"), 100), ("R-2", "Гайка", 3, 7)])
    # The first supplier's bolt costs more in its next list: 12.50 is history.
    send(first.mailbox, [("R-1", "Болт 8х40", Decimal("13.75"), 90), ("R-2", "Гайка", 3, 7)])
    send(
        second.mailbox, [("V-9", "Болт оцинк. M8x40", Decimal("11.20"), 5), ("V-8", "Шайба", 1, 1)]
    )
    link(first, "R-1", bolt)
    link(second, "V-9", bolt, state=State.CONFIRMED, kind=Kind.MANUAL, confidence="1")
    link(first, "R-2", bolt, state=State.PROPOSED, kind=Kind.NAME, confidence="0.700")
    return World(bolt, nut, first, second)
