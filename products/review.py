"""The review queue's decisions on supplier links: confirm a proposed product, reject it,
choose another one, or make a product of ours from the line and link it.

Each decision is made by a person, so it leaves the link ``confirmed`` (or ``rejected``)
with who made it and when (``confirmed_by``, ``confirmed_at``) and a confidence of 1,
and writes one ``LinkEvent`` with the product before and after. How the link was made
(``kind``):

- confirming a proposal keeps the kind the matching found it by (barcode, article and
  brand, name similarity): the evidence is the matching's, the person agreed with it;
- choosing a product (a candidate or any other) or making one is ``manual``;
- rejecting keeps the link's kind and its rejected product: the line stays unlinked
  (no product of ours is its), and the product it is not is on record, for the queue
  and for the matching.

Every decision names what the person saw: confirming or rejecting is refused
(``LinkChanged``) when the link no longer proposes the product shown, e.g. the
matching ran again meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models.functions import Now
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from . import linking
from .events import product_links_changed
from .models import LinkEvent, Product, SupplierLink

PERSON = Decimal(1)  # a person's confidence in a link they decided on
State = SupplierLink.State
Kind = SupplierLink.Kind
# What the queue asks a person to decide: a proposal (or a link made automatically,
# which the link's own page lets a person confirm or reject).
CONFIRMABLE = (State.PROPOSED, State.AUTO)
REJECTABLE = (State.PROPOSED, State.AUTO, State.CONFIRMED)


class ReviewRefused(Exception):
    """The decision cannot be made (the message says why)."""

    message: Promise = _("the decision cannot be made")

    def __init__(self, **params: Any) -> None:
        self.params = params
        super().__init__(self.said())

    def said(self) -> str:
        """The reason in the active language."""
        return str(self.message) % self.params


class LinkChanged(ReviewRefused):
    message = _(
        "the link of %(sku)s changed since the page was shown (the matching ran again, or "
        "someone decided): look at it again"
    )


class ProductUnavailable(ReviewRefused):
    message = _("product %(product)s does not exist or is retired")


@dataclass(frozen=True)
class Line:
    """A supplier line: a config's SKU."""

    config_id: int
    sku: str


def _event(link: SupplierLink, *, before: int | None, user: AbstractBaseUser | None) -> LinkEvent:
    return LinkEvent(
        link=link,
        user_id=user.pk if user is not None else None,
        product_before_id=before,
        product_after_id=link.product_id,
        state=link.state,
        kind=link.kind,
        confidence=link.confidence,
    )


def _decided(link: SupplierLink, *, state: str, user: AbstractBaseUser | None) -> None:
    link.state = state
    link.confirmed_by_id = user.pk if user is not None else None
    link.confirmed_at = Now()
    link.updated_at = Now()


def _locked(line: Line) -> SupplierLink | None:
    return (
        SupplierLink.objects.select_for_update()
        .filter(config_id=line.config_id, supplier_sku=line.sku)
        .first()
    )


def _saved(link: SupplierLink, *, before: int | None, user: AbstractBaseUser | None) -> None:
    link.save()
    link.refresh_from_db(fields=["confirmed_at", "updated_at", "created_at"])
    _event(link, before=before, user=user).save()
    product_links_changed([before, link.product_id])


@transaction.atomic
def link_confirm(*, line: Line, product_id: int, user: AbstractBaseUser) -> SupplierLink:
    """The line's proposed product (``product_id``, as shown) becomes its confirmed one;
    the link keeps the kind the matching found it by."""
    link = _locked(line)
    if link is None or link.state not in CONFIRMABLE or link.product_id != product_id:
        raise LinkChanged(sku=line.sku)
    _decided(link, state=State.CONFIRMED, user=user)
    link.confidence = PERSON
    _saved(link, before=link.product_id, user=user)
    return link


@transaction.atomic
def link_reject(*, line: Line, product_id: int, user: AbstractBaseUser) -> SupplierLink:
    """The line is not product ``product_id`` (as shown): the link is ``rejected``,
    keeping the rejected product on record; the line stays unlinked."""
    link = _locked(line)
    if link is None or link.state not in REJECTABLE or link.product_id != product_id:
        raise LinkChanged(sku=line.sku)
    _decided(link, state=State.REJECTED, user=user)
    _saved(link, before=link.product_id, user=user)
    return link


@transaction.atomic
def link_choose(*, line: Line, product_id: int, user: AbstractBaseUser) -> SupplierLink:
    """The line is our product ``product_id`` (a candidate, or any active product):
    its link is made or changed, ``confirmed``. Choosing the product a proposal already
    names confirms the proposal (its kind kept)."""
    product = Product.objects.active().filter(pk=product_id).first()
    if product is None:
        raise ProductUnavailable(product=product_id)
    link = _locked(line)
    if link is None:
        # A matching's part that may be linking the line ends first (or waits for this).
        linking.lines_lock([(line.config_id, line.sku)])
        if _locked(line) is not None:
            raise LinkChanged(sku=line.sku)
        link = SupplierLink(config_id=line.config_id, supplier_sku=line.sku, product=product)
        link.kind = Kind.MANUAL
        before = None
        try:
            with transaction.atomic():  # another decision made it meanwhile
                _decided(link, state=State.CONFIRMED, user=user)
                link.confidence = PERSON
                _saved(link, before=before, user=user)
        except IntegrityError:
            raise LinkChanged(sku=line.sku) from None
        return link
    if link.product_id == product.pk and link.state == State.CONFIRMED:
        return link  # already so: nothing changes, nothing to record
    before = link.product_id
    if not (link.product_id == product.pk and link.state in CONFIRMABLE):
        link.kind = Kind.MANUAL
    link.product = product
    _decided(link, state=State.CONFIRMED, user=user)
    link.confidence = PERSON
    _saved(link, before=before, user=user)
    return link


@transaction.atomic
def links_confirm(*, proposals: Iterable[tuple[int, int]], user: AbstractBaseUser) -> int:
    """Confirms each link ``(link id, product id shown)`` that still proposes the product
    shown (the review queue's page); returns how many. The others are left as they are."""
    wanted = dict(proposals)
    links = (
        SupplierLink.objects.select_for_update()
        .filter(pk__in=wanted, state__in=CONFIRMABLE)
        .order_by("pk")
    )
    confirmed = 0
    for link in links:
        if link.product_id != wanted[link.pk]:
            continue
        _decided(link, state=State.CONFIRMED, user=user)
        link.confidence = PERSON
        _saved(link, before=link.product_id, user=user)
        confirmed += 1
    return confirmed


@transaction.atomic
def product_create_for_line(
    *, line: Line, values: Mapping[str, Any], user: AbstractBaseUser
) -> SupplierLink:
    """Adds our product ``values`` (own code, name, brand, article, barcodes, unit,
    category: the line's, with the code the person gave) and links the line to it by
    hand. A taken own code is an IntegrityError: the form checks it first."""
    product = Product.objects.create(**values)
    return link_choose(line=line, product_id=product.pk, user=user)
