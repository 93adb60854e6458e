"""Reading our products with what suppliers offer for them: one query for the admin's
product page and the API alike.

A product's **offer** from a supplier is its link (SupplierLink: config + supplier SKU)
with that config's current catalogue entry of the SKU (pricefeed's CatalogueEntry with
no ``valid_to``): price, currency, quantity, since when, and the list's date (the date
of the supplier's message, else when the import became current). Its **history** is the
entries of those SKUs that ended. A link whose SKU the current list does not hold is
still an offer, without a price (the supplier stopped listing it).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from pricefeed.models import CatalogueEntry, PriceImport

from .models import SupplierLink

State = SupplierLink.State
# Links that make an offer; proposed ones are shown apart, rejected ones never.
OFFERING = (State.AUTO, State.CONFIRMED)
HISTORY_KEPT = 200
LINKS_READ = 100  # a product's history reads the SKUs of at most this many links
ENTRY_FIELDS = ("price", "currency", "quantity", "valid_from", "price_import_id", "row_number")


def _current_entry(field: str) -> Subquery:
    entries = CatalogueEntry.objects.filter(
        config_id=OuterRef("config_id"), sku=OuterRef("supplier_sku"), valid_to__isnull=True
    )
    return Subquery(entries.values(field)[:1])


def product_offers(product_id: int, *, states: Iterable[str] = OFFERING) -> QuerySet[SupplierLink]:
    """The product's links in ``states`` with their current entries, by config name:
    each link annotated with ``price``, ``currency``, ``quantity``, ``valid_from``,
    ``price_import_id``, ``row_number`` (all None when the current list lacks the SKU)
    and ``list_date``."""
    links = SupplierLink.objects.filter(product_id=product_id, state__in=list(states))
    annotated = links.select_related("config").annotate(
        **{f"entry_{field}": _current_entry(field) for field in ENTRY_FIELDS}
    )
    list_date = PriceImport.objects.filter(pk=OuterRef("entry_price_import_id")).values(
        date=Coalesce("message__sent_at", "accepted_at")
    )[:1]
    return annotated.annotate(list_date=Subquery(list_date)).order_by("config__name", "id")


def offers_history(product_id: int, *, limit: int = HISTORY_KEPT) -> QuerySet[CatalogueEntry]:
    """The entries of the product's linked SKUs (links auto or confirmed) that ended,
    the latest end first, at most ``limit``."""
    pairs = SupplierLink.objects.filter(product_id=product_id, state__in=OFFERING).values_list(
        "config_id", "supplier_sku"
    )
    wanted = Q(pk__in=[])
    for config_id, sku in pairs[:LINKS_READ]:
        wanted |= Q(config_id=config_id, sku=sku)
    return (
        CatalogueEntry.objects.filter(wanted, valid_to__isnull=False)
        .select_related("config")
        .order_by("-valid_to", "-id")[:limit]
    )


def unlinked_lines(config_id: int) -> QuerySet[CatalogueEntry]:
    """The config's current catalogue entries whose SKU has no link that makes an offer
    (none at all, proposed or rejected), by SKU; annotated with ``link_state`` and
    ``link_product`` (the proposed or rejected product's own code), None when unlinked."""
    offering = SupplierLink.objects.filter(
        config_id=OuterRef("config_id"), supplier_sku=OuterRef("sku"), state__in=OFFERING
    )
    link = SupplierLink.objects.filter(
        config_id=OuterRef("config_id"), supplier_sku=OuterRef("sku")
    )
    return (
        CatalogueEntry.objects.filter(config_id=config_id, valid_to__isnull=True)
        .filter(~Exists(offering))
        .annotate(
            link_state=Subquery(link.values("state")[:1]),
            link_product=Subquery(link.values("product__own_code")[:1]),
        )
        .order_by("sku")
    )
