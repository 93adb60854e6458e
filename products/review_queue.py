"""What the review queue shows: the supplier lines no product of ours is confirmed for,
with what the matching found for each.

A line is a current catalogue entry of a config (a price item made current, not ended).
It is in the queue when its (config, SKU) has no link, a proposed one, or a rejected one
(the line stays unlinked; the product it is not is on record). Lines linked
automatically or confirmed are not: the SupplierLink list shows them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import Combinable

from pricefeed.models import PriceItem

from .models import LinkCandidate, SupplierLink

State = SupplierLink.State
# The candidates shown per line (keys 1 to 5 choose them).
CANDIDATES_SHOWN = 5
PROPOSED = "proposed"
UNLINKED = "unlinked"
SHOWS = (PROPOSED, UNLINKED)


def current_lines() -> QuerySet[PriceItem]:
    """Every config's current catalogue entries (the index one_current_entry_per_sku)."""
    return PriceItem.objects.filter(
        config_id__isnull=False, valid_from__isnull=False, valid_to__isnull=True
    )


def queue_lines(
    *, config_id: int | None = None, show: str = "", search: str = ""
) -> QuerySet[PriceItem]:
    """The lines of the queue (of one config, or of all), in config and SKU order, each
    annotated with its link's state (``link_state``, None: no link). ``show`` narrows
    them to the proposed or the unlinked ones (no link, or a rejected one); ``search``
    to a SKU or a part of a name."""
    link = SupplierLink.objects.filter(
        config_id=OuterRef("config_id"), supplier_sku=OuterRef("sku")
    )
    # (Anti-)semi-joins, which PostgreSQL runs as hash joins over the whole catalogue
    # (the page's count); the state itself is read for the page's rows only.
    wanted: Exists | Combinable
    if show == PROPOSED:
        wanted = Exists(link.filter(state=State.PROPOSED))
    elif show == UNLINKED:
        wanted = ~Exists(link.exclude(state=State.REJECTED))
    else:
        wanted = ~Exists(link.filter(state__in=[State.AUTO, State.CONFIRMED]))
    lines = current_lines().filter(wanted)
    if config_id is not None:
        lines = lines.filter(config_id=config_id)
    lines = lines.annotate(link_state=Subquery(link.values("state")[:1]))
    search = search.strip()
    if search:
        lines = lines.filter(Q(sku=search) | Q(name__icontains=search))
    return lines.order_by("config_id", "sku")


@dataclass
class QueueLine:
    """One line of a page of the queue: the supplier's line, its link (proposed or
    rejected, or None) and the candidates the matching found, best first."""

    item: PriceItem
    link: SupplierLink | None
    candidates: list[LinkCandidate] = field(default_factory=list)

    @property
    def proposed(self) -> bool:
        return self.link is not None and self.link.state == State.PROPOSED

    @property
    def rejected_product_id(self) -> int | None:
        if self.link is not None and self.link.state == State.REJECTED:
            return self.link.product_id
        return None


def queue_page(items: Sequence[PriceItem]) -> list[QueueLine]:
    """The links and the first CANDIDATES_SHOWN candidates of a page's lines: two
    queries, whatever the page's length."""
    keys = {(item.config_id, item.sku) for item in items}
    configs = {config_id for config_id, _sku in keys}
    skus = {sku for _config_id, sku in keys}
    links = {
        (link.config_id, link.supplier_sku): link
        for link in SupplierLink.objects.filter(
            config_id__in=configs, supplier_sku__in=skus
        ).select_related("product")
        if (link.config_id, link.supplier_sku) in keys
    }
    candidates: dict[tuple[int, str], list[LinkCandidate]] = defaultdict(list)
    found = LinkCandidate.objects.filter(config_id__in=configs, supplier_sku__in=skus)
    for candidate in found.select_related("product").order_by("rank", "-score", "pk"):
        key = (candidate.config_id, candidate.supplier_sku)
        if key in keys and len(candidates[key]) < CANDIDATES_SHOWN:
            candidates[key].append(candidate)
    return [
        QueueLine(
            item=item,
            link=links.get((item.config_id, item.sku)),  # type: ignore[arg-type]
            candidates=candidates[(item.config_id, item.sku)],  # type: ignore[index]
        )
        for item in items
    ]
