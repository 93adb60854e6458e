"""An import made current is announced (import.accepted, in its transaction) and the
outbox handler links its lines: through the real pipeline, a price list received,
imported and the outbox delivered; a held import's lines once it is approved."""

from __future__ import annotations

import io

import pytest
from openpyxl import Workbook

from outbox.models import OutboxEvent
from pricefeed.catalogue import ACCEPTED_EVENT
from products.models import SupplierLink
from tests import factories

from .lines import products

pytestmark = pytest.mark.django_db


def price_list(rows) -> bytes:
    book = Workbook()
    sheet = book.active
    sheet.append(["Код товара", "Наименование", "Цена"])
    for row in rows:
        sheet.append(list(row))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_an_accepted_import_is_linked_by_the_outbox_handler(mailbox, config, no_queue):
    made = products(
        [
            ("OWN-1", "Болт М8х40 DIN 933 оцинкованный", "", "", []),
            ("OWN-2", "Гайка М8 DIN 934 оцинкованная", "", "", []),
        ]
    )
    rows = [("A-1", "БОЛТ оцинк. M8*40 DIN933", "4,20"), ("A-2", "Шайба 8 плоская", "0,60")]
    message = factories.receive(mailbox, [("прайс.xlsx", price_list(rows))])
    (price_import,) = factories.run_all(message)
    assert price_import.accepted_at is not None
    event = OutboxEvent.objects.get(kind=ACCEPTED_EVENT)
    assert event.payload == {"import_id": price_import.pk, "config_id": config.pk}
    factories.deliver_everything()
    link = SupplierLink.objects.get(config=config)
    assert (link.supplier_sku, link.product, link.state) == ("A-1", made[0], "auto")
    # Delivered again (at-least-once): nothing changes.
    from products.handlers import match_import

    assert match_import([event]) == {event.id: None}
    assert SupplierLink.objects.count() == 1
