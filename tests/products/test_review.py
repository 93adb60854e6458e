"""The review queue's decisions (products.review) and what the queue shows
(products.review_queue), on PostgreSQL."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from products import review
from products.models import LinkEvent, Product, SupplierLink
from products.review_queue import PROPOSED, UNLINKED, queue_lines, queue_page

from .review_data import Queue, two_suppliers

pytestmark = pytest.mark.django_db
State = SupplierLink.State
Kind = SupplierLink.Kind


@pytest.fixture
def queue(mailbox) -> Queue:
    return two_suppliers(mailbox)


@pytest.fixture
def operator(db) -> User:
    return User.objects.create_user("operator")


def line(queue: Queue, sku: str) -> review.Line:
    config = queue.north if sku.startswith("N") else queue.south
    return review.Line(config_id=config.pk, sku=sku)


def link_of(queue: Queue, sku: str) -> SupplierLink | None:
    key = line(queue, sku)
    return SupplierLink.objects.filter(config_id=key.config_id, supplier_sku=sku).first()


# -- the queue -------------------------------------------------------------------------


def test_the_queue_holds_the_proposed_and_unlinked_current_lines_of_each_config(queue):
    shown = [(item.config_id, item.sku, item.link_state) for item in queue_lines()]

    north, south = queue.north.pk, queue.south.pk
    assert shown == [
        (north, "N-1", State.PROPOSED),
        (north, "N-2", State.PROPOSED),
        (north, "N-3", None),
        (north, "N-5", None),
        (south, "S-1", State.PROPOSED),
        (south, "S-2", None),
    ]  # N-4, linked automatically, is not in it


def test_the_queue_narrows_to_a_config_to_proposed_or_unlinked_lines_and_to_a_search(queue):
    def skus(**filters):
        return [item.sku for item in queue_lines(**filters)]

    assert skus(config_id=queue.south.pk) == ["S-1", "S-2"]
    assert skus(config_id=queue.north.pk, show=PROPOSED) == ["N-1", "N-2"]
    assert skus(config_id=queue.north.pk, show=UNLINKED) == ["N-3", "N-5"]
    assert skus(search="шайба") == ["N-3", "S-2"]
    assert skus(search="N-5") == ["N-5"]


def test_a_line_that_left_the_catalogue_leaves_the_queue(queue):
    from pricefeed.models import PriceItem

    PriceItem.objects.filter(sku="N-5").update(valid_to="2030-01-01T00:00:00Z")

    assert "N-5" not in [item.sku for item in queue_lines()]


def test_a_page_carries_each_lines_link_and_its_candidates_best_first(queue):
    page = {entry.item.sku: entry for entry in queue_page(list(queue_lines()))}

    assert page["N-1"].proposed and page["N-1"].link.product == queue.products["bolt"]
    assert [c.product.own_code for c in page["N-1"].candidates] == ["П-0001", "П-0002"]
    assert [c.product.own_code for c in page["N-3"].candidates] == ["П-0004", "П-0005"]
    assert page["N-5"].link is None and page["N-5"].candidates == []
    # Another config's candidates for another SKU are not this line's.
    assert [c.product.own_code for c in page["S-2"].candidates] == ["П-0005"]


# -- confirm ---------------------------------------------------------------------------


def test_confirming_a_proposal_keeps_its_kind_and_records_who_and_the_event(queue, operator):
    bolt = queue.products["bolt"]

    link = review.link_confirm(line=line(queue, "N-1"), product_id=bolt.pk, user=operator)

    link.refresh_from_db()
    assert (link.state, link.kind, link.product_id) == (State.CONFIRMED, Kind.ARTICLE, bolt.pk)
    assert link.confidence == Decimal(1)
    assert link.confirmed_by == operator and link.confirmed_at is not None
    event = LinkEvent.objects.get(link=link)
    assert (event.user, event.product_before, event.product_after) == (operator, bolt, bolt)
    assert (event.state, event.kind, event.confidence) == (State.CONFIRMED, Kind.ARTICLE, 1)
    assert "N-1" not in [item.sku for item in queue_lines()]


def test_confirming_a_product_the_link_no_longer_proposes_is_refused(queue, operator):
    SupplierLink.objects.filter(pk=queue.links["N-1"].pk).update(
        product=queue.products["bolt50"]
    )  # the matching ran again meanwhile

    with pytest.raises(review.LinkChanged):
        review.link_confirm(
            line=line(queue, "N-1"), product_id=queue.products["bolt"].pk, user=operator
        )
    assert link_of(queue, "N-1").state == State.PROPOSED
    assert not LinkEvent.objects.exists()


def test_confirming_a_line_without_a_proposal_is_refused(queue, operator):
    with pytest.raises(review.LinkChanged):
        review.link_confirm(
            line=line(queue, "N-3"), product_id=queue.products["washer"].pk, user=operator
        )
    assert link_of(queue, "N-3") is None


# -- reject ----------------------------------------------------------------------------


def test_rejecting_keeps_the_rejected_product_on_record_and_the_line_unlinked(queue, operator):
    nut = queue.products["nut"]

    review.link_reject(line=line(queue, "N-2"), product_id=nut.pk, user=operator)

    link = link_of(queue, "N-2")
    assert (link.state, link.product_id, link.confirmed_by) == (State.REJECTED, nut.pk, operator)
    event = LinkEvent.objects.get(link=link)
    assert (event.state, event.product_before, event.product_after) == (State.REJECTED, nut, nut)
    # Unlinked again: in the queue among the unlinked lines, no longer proposed.
    north = queue.north.pk
    assert "N-2" in [i.sku for i in queue_lines(config_id=north, show=UNLINKED)]
    assert "N-2" not in [i.sku for i in queue_lines(config_id=north, show=PROPOSED)]


# -- choose ----------------------------------------------------------------------------


def test_choosing_a_candidate_for_an_unlinked_line_links_it_by_hand(queue, operator):
    washer = queue.products["washer"]

    link = review.link_choose(line=line(queue, "N-3"), product_id=washer.pk, user=operator)

    link.refresh_from_db()
    assert (link.state, link.kind, link.product_id) == (State.CONFIRMED, Kind.MANUAL, washer.pk)
    assert (link.confidence, link.confirmed_by) == (Decimal(1), operator)
    event = LinkEvent.objects.get(link=link)
    assert (event.product_before, event.product_after, event.user) == (None, washer, operator)


def test_choosing_another_product_than_the_proposed_one_is_manual_with_both_recorded(
    queue, operator
):
    bolt, bolt50 = queue.products["bolt"], queue.products["bolt50"]

    link = review.link_choose(line=line(queue, "N-1"), product_id=bolt50.pk, user=operator)

    assert (link.state, link.kind, link.product_id) == (State.CONFIRMED, Kind.MANUAL, bolt50.pk)
    event = LinkEvent.objects.get(link=link)
    assert (event.product_before, event.product_after) == (bolt, bolt50)


def test_choosing_the_proposed_product_confirms_the_proposal_with_its_kind(queue, operator):
    link = review.link_choose(
        line=line(queue, "N-1"), product_id=queue.products["bolt"].pk, user=operator
    )

    assert (link.state, link.kind) == (State.CONFIRMED, Kind.ARTICLE)


def test_choosing_after_a_rejection_links_the_line_and_keeps_both_events(queue, operator):
    nut, washer = queue.products["nut"], queue.products["washer"]
    review.link_reject(line=line(queue, "N-2"), product_id=nut.pk, user=operator)

    review.link_choose(line=line(queue, "N-2"), product_id=washer.pk, user=operator)

    link = link_of(queue, "N-2")
    assert (link.state, link.kind, link.product_id) == (State.CONFIRMED, Kind.MANUAL, washer.pk)
    assert list(
        LinkEvent.objects.filter(link=link).values_list("state", "product_after__own_code")
    ) == [(State.REJECTED, "П-0003"), (State.CONFIRMED, "П-0004")]


def test_choosing_a_retired_or_missing_product_is_refused(queue, operator):
    washer = queue.products["washer"]
    Product.objects.filter(pk=washer.pk).update(retired_at="2026-01-01T00:00:00Z")

    with pytest.raises(review.ProductUnavailable):
        review.link_choose(line=line(queue, "N-3"), product_id=washer.pk, user=operator)
    with pytest.raises(review.ProductUnavailable):
        review.link_choose(line=line(queue, "N-3"), product_id=10**9, user=operator)
    assert link_of(queue, "N-3") is None


def test_choosing_what_is_already_confirmed_records_nothing_more(queue, operator):
    washer = queue.products["washer"]
    review.link_choose(line=line(queue, "N-3"), product_id=washer.pk, user=operator)

    review.link_choose(line=line(queue, "N-3"), product_id=washer.pk, user=operator)

    assert LinkEvent.objects.filter(link__supplier_sku="N-3").count() == 1


# -- bulk ------------------------------------------------------------------------------


def test_bulk_confirm_confirms_the_proposals_still_as_shown_and_skips_the_others(queue, operator):
    shown = [(queue.links[sku].pk, queue.links[sku].product_id) for sku in ("N-1", "N-2", "S-1")]
    SupplierLink.objects.filter(pk=queue.links["N-2"].pk).update(product=queue.products["washer"])

    confirmed = review.links_confirm(proposals=shown, user=operator)

    assert confirmed == 2
    states = dict(SupplierLink.objects.values_list("supplier_sku", "state"))
    assert states == {
        "N-1": State.CONFIRMED,
        "N-2": State.PROPOSED,
        "S-1": State.CONFIRMED,
        "N-4": State.AUTO,
    }
    assert LinkEvent.objects.count() == 2
    assert set(LinkEvent.objects.values_list("user", flat=True)) == {operator.pk}


# -- a new product ---------------------------------------------------------------------


def test_a_product_made_from_a_line_is_added_and_the_line_linked_to_it(queue, operator):
    values = {
        "own_code": "П-0100",
        "name": "Сверло по бетону 6х110",
        "brand": "Бурмаш",
        "article": "SB-6110",
        "barcodes": ["4601234567893"],
        "unit": "шт",
        "category": "Инструмент / Свёрла",
    }

    link = review.product_create_for_line(line=line(queue, "N-5"), values=values, user=operator)

    product = Product.objects.get(own_code="П-0100")
    assert (product.name, product.barcodes, product.unit) == (
        "Сверло по бетону 6х110",
        ["4601234567893"],
        "шт",
    )
    assert (link.product, link.state, link.kind) == (product, State.CONFIRMED, Kind.MANUAL)
    assert LinkEvent.objects.get(link=link).product_after == product


def test_a_link_made_by_another_decision_meanwhile_is_said_not_overwritten(
    queue, operator, monkeypatch
):
    # Another operator's choice committed between this one's look (no link) and its
    # insert: the unique (config, SKU) refuses the second link.
    washer, grower = queue.products["washer"], queue.products["grower"]
    review.link_choose(line=line(queue, "N-3"), product_id=grower.pk, user=operator)
    monkeypatch.setattr(review, "_locked", lambda _line: None)

    with pytest.raises(review.LinkChanged):
        review.link_choose(line=line(queue, "N-3"), product_id=washer.pk, user=operator)

    assert link_of(queue, "N-3").product == grower
    assert LinkEvent.objects.filter(link__supplier_sku="N-3").count() == 1
