"""Offers and our prices computed from real accepted lists: conversion at the list's
date, what counts, the best offer and why, the price and its audit, holds and
approvals, and the events that announce each change."""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_CEILING
from decimal import Decimal as D
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from pricing import offers
from pricing.models import (
    Offer,
    OfferRule,
    PriceRule,
    ProductPrice,
    PublishedVersion,
    Rate,
    SupplierTerms,
)
from products import review
from products.linking import links_match
from products.models import Product, SupplierLink
from tests.factories import create_config, create_mailbox, deliver_everything, receive, run_all

State = SupplierLink.State


def price_list(rows, *, rrp=False) -> bytes:
    """A list with the main price, optionally a recommended one, and stock."""
    head = "Артикул;Наименование;Цена" + (";РРЦ" if rrp else "") + ";Остаток"
    lines = ["Прайс-лист", head]
    for row in rows:
        lines.append(";".join(str(v).replace(".", ",") for v in row))
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


def send(config, rows, *, rrp=False) -> PriceImport:
    message = receive(config.mailbox, [("прайс.csv", price_list(rows, rrp=rrp))])
    (price_import,) = run_all(message)
    assert price_import.accepted_at is not None, price_import.last_error
    return price_import


def link(config, sku, product, state=State.AUTO) -> SupplierLink:
    found, _ = SupplierLink.objects.update_or_create(
        config=config, supplier_sku=sku,
        defaults=dict(product=product, kind="barcode", state=state, confidence=D("0.99")),
    )  # fmt: skip
    return found


@pytest.fixture
def world(db, no_queue):
    return make_world()


def make_world():
    """Two products; a rouble supplier (with a recommended price) and a dollar one
    (rate 90, +2 %, priority 10); each product linked to both; one catch-all rule."""
    bolt = Product.objects.create(
        own_code="P-1", name="Болт М8х40", brand="Bosch", category="Крепёж / Болты"
    )
    nut = Product.objects.create(own_code="P-2", name="Гайка М8", brand="Kreps", category="Крепёж")
    roubles = create_config(
        create_mailbox(name="first"), name="Ромашка", columns={"prices": {"rrp": "РРЦ"}}
    )
    dollars = create_config(create_mailbox(name="second"), name="Василёк", default_currency="USD")
    SupplierTerms.objects.create(config=dollars, rate_surcharge=D(2), priority=10)
    Rate.objects.create(currency="USD", date=timezone.localdate() - timedelta(days=1), rate=D("90"))
    send(
        roubles, [("R-1", "Болт", "1000.00", "1500.00", 5), ("R-2", "Гайка", "50", "", 0)], rrp=True
    )
    send(dollars, [("V-1", "Bolt", "10.50", 3), ("V-2", "Nut", "0.40", 100)])
    deliver_everything()  # the lists matched (nothing found): then the links by hand
    OutboxEvent.objects.all().delete()
    link(roubles, "R-1", bolt)
    link(dollars, "V-1", bolt, state=State.CONFIRMED)
    link(roubles, "R-2", nut)
    link(dollars, "V-2", nut)
    PriceRule.objects.create(name="Всё", markup_percent=D(20), rounding="1", respect_rrp=False)
    return type("World", (), dict(bolt=bolt, nut=nut, roubles=roubles, dollars=dollars))


def held_world():
    """The world without a dollar rate (two offers wait for one) and both prices held
    after the markup went from 20 to 60 %."""
    found = make_world()
    Rate.objects.all().delete()
    offers.offers_refresh([found.bolt.pk, found.nut.pk])
    PriceRule.objects.update(markup_percent=D(60))
    offers.offers_refresh([found.bolt.pk, found.nut.pk])
    return found


def events(kind):
    return list(OutboxEvent.objects.filter(kind=kind).order_by("created_at", "id"))


def test_offers_are_converted_at_the_lists_date_with_the_surcharge(world):
    done = offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert done.products == 2
    usd = Offer.objects.get(product=world.bolt, config=world.dollars, price_type="")
    assert usd.currency == "USD"
    assert usd.rate == D("91.80000000")  # 90 + 2 %
    assert usd.price_rub == D("963.9000")  # 10.50 × 91.80
    assert usd.status == "ok"
    rub = Offer.objects.get(product=world.bolt, config=world.roubles, price_type="")
    assert rub.price_rub == D("1000.0000")
    assert rub.rate is None
    rrp = Offer.objects.get(product=world.bolt, config=world.roubles, price_type="rrp")
    assert rrp.price_rub == D("1500.0000")


def test_the_best_offer_is_marked_with_why_and_priced_with_an_audit(world):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    best = Offer.objects.get(product=world.bolt, best=True)
    assert best.config == world.dollars
    assert best.reason["why"] == "cheapest"
    assert best.reason["counted"] == 2
    price = ProductPrice.objects.get(product=world.bolt)
    assert price.status == "published"
    assert price.price == D("1157.00")  # 963.90 × 1.2 = 1156.68, up to a rouble
    assert price.available
    assert price.audit["offer"]["currency"] == "USD"
    assert price.audit["offer"]["rate"] == "91.80000000"
    assert price.audit["rule"]["name"] == "Всё"
    assert [s[0] for s in price.audit["steps"]] == ["cost", "markup", "round"]
    # The nut: the rouble supplier has none in stock, the dollar one has.
    nut_best = Offer.objects.get(product=world.nut, best=True)
    assert nut_best.config == world.dollars
    assert (
        Offer.objects.get(product=world.nut, config=world.roubles, price_type="").in_stock is False
    )


def test_changes_are_announced_once_and_a_second_refresh_changes_nothing(world):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    (offer_event,) = events(offers.OFFER_CHANGED)
    (price_event,) = events(offers.PRICE_CHANGED)
    assert {item["own_code"] for item in offer_event.payload["items"]} == {"P-1", "P-2"}
    bolt_item = next(i for i in price_event.payload["items"] if i["own_code"] == "P-1")
    assert bolt_item == {
        "product_id": world.bolt.pk, "own_code": "P-1", "price": "1157.00", "before": None,
        "currency": "RUB", "available": True,
    }  # fmt: skip
    version = PublishedVersion.objects.get().number
    assert price_event.payload["version"] == version
    again = offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert (again.best_changed, again.published_changed) == (0, 0)
    assert len(events(offers.OFFER_CHANGED)) == 1
    assert len(events(offers.PRICE_CHANGED)) == 1
    assert PublishedVersion.objects.get().number == version


def _one(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchone()[0]


def test_a_refresh_compresses_its_write_ahead_log_where_the_role_may(world):
    with connection.cursor() as cursor:
        server = _one(cursor, "SHOW wal_compression")
        may = _one(cursor, "SELECT has_parameter_privilege('wal_compression', 'SET')")
        offers.offers_refresh([world.bolt.pk, world.nut.pk])
        # (The refresh's setting lasts until the outermost transaction ends: the test's.)
        during = _one(cursor, "SHOW wal_compression")
    if server == "off" and may:
        assert during in ("lz4", "pglz")
    else:
        assert during == server
    assert ProductPrice.objects.get(product=world.bolt).price == D("1157.00")


def test_a_refresh_stores_its_wide_values_with_lz4_where_the_server_has_it(world):
    with connection.cursor() as cursor:
        server = _one(cursor, "SHOW default_toast_compression")
        has_lz4 = _one(
            cursor,
            "SELECT 'lz4' = ANY (enumvals) FROM pg_settings"
            " WHERE name = 'default_toast_compression'",
        )
        offers.offers_refresh([world.bolt.pk, world.nut.pk])
        # (The refresh's setting lasts until the outermost transaction ends: the test's.)
        during = _one(cursor, "SHOW default_toast_compression")
        # A value wide enough to be compressed, stored after the refresh in its transaction.
        cursor.execute(
            "CREATE TEMP TABLE wide ON COMMIT DROP AS"
            " SELECT jsonb_agg(jsonb_build_object('own_code', 'P-' || n)) AS payload"
            " FROM generate_series(1, 500) n"
        )
        stored = _one(cursor, "SELECT pg_column_compression(payload) FROM wide")
    assert during == ("lz4" if has_lz4 else server)
    assert stored == during
    assert ProductPrice.objects.get(product=world.bolt).price == D("1157.00")


def test_a_role_that_may_not_compress_the_log_leaves_it_as_the_server_has_it(db):
    with connection.cursor() as cursor:
        server = _one(cursor, "SHOW wal_compression")
        # A role without the right to set it (a predefined one, for this transaction).
        cursor.execute("SET LOCAL ROLE pg_read_all_settings")
        try:
            cursor.execute(offers.WAL_COMPRESSION_SQL)
            assert cursor.fetchall() == []
            assert _one(cursor, "SHOW wal_compression") == server
        finally:
            cursor.execute("RESET ROLE")


def test_an_offer_is_updated_when_it_changes_and_only_its_mark_when_it_stops_being_best(world):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    usd = Offer.objects.get(product=world.bolt, config=world.dollars, price_type="")
    assert usd.best  # 963.90 roubles against the rouble supplier's 1,000
    # (Every refresh of the test's one transaction writes the same now(): an earlier time
    # shows which rows a refresh updated.)
    earlier = timezone.now() - timedelta(days=3)
    Offer.objects.update(updated_at=earlier)
    send(
        world.roubles,
        [("R-1", "Болт", "900.00", "1500.00", 5), ("R-2", "Гайка", "50", "", 0)],
        rrp=True,
    )
    # (Every supplier's offers made again: the dollar one goes through the same write.)
    done = offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert done.best_changed == 1
    rub = Offer.objects.get(product=world.bolt, config=world.roubles, price_type="")
    assert (rub.price_rub, rub.best, rub.reason["why"]) == (D("900.0000"), True, "cheapest")
    assert rub.updated_at > earlier
    usd.refresh_from_db()
    # The dollar offer is as it was: only its mark and its reason went.
    assert (usd.price_rub, usd.best, usd.reason) == (D("963.9000"), False, {})
    assert usd.updated_at == earlier
    assert Offer.objects.filter(best=True).count() == 2  # one per product


def test_a_suppliers_refresh_leaves_a_price_whose_inputs_stand_as_they_were(world):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    before = {p.product_id: (p.price, p.audit) for p in ProductPrice.objects.all()}
    # The rouble supplier's next list: both products dearer there still (the dollar
    # supplier's offers stay the best, for the same reasons): no price is computed again.
    send(
        world.roubles, [("R-1", "Болт", "1100", "1500", 5), ("R-2", "Гайка", "60", "", 0)], rrp=True
    )
    done = offers.config_offers_refresh(world.roubles.pk)
    assert (done.products, done.settled, done.best_changed) == (2, 2, 0)
    assert {p.product_id: (p.price, p.audit) for p in ProductPrice.objects.all()} == before
    assert Offer.objects.get(product=world.bolt, config=world.roubles, price_type="").price == 1100
    # ... and the prices are what computing everything again gives.
    again = offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert (again.settled, again.best_changed, again.published_changed) == (0, 0, 0)

    # Its bolt now the cheapest: that price is computed again, the nut's is not.
    send(
        world.roubles, [("R-1", "Болт", "900", "1500", 5), ("R-2", "Гайка", "60", "", 0)], rrp=True
    )
    done = offers.config_offers_refresh(world.roubles.pk)
    assert (done.settled, done.best_changed) == (1, 1)
    price = ProductPrice.objects.get(product=world.bolt)
    assert (price.config, price.audit["offer"]["price_rub"]) == (world.roubles, "900.0000")

    # The nut in stock there now: its best stands, but one more offer is in stock. The
    # bolt's best is this supplier's own offer, as it was: settled.
    send(
        world.roubles, [("R-1", "Болт", "900", "1500", 5), ("R-2", "Гайка", "60", "", 5)], rrp=True
    )
    done = offers.config_offers_refresh(world.roubles.pk)
    assert done.settled == 1
    nut = ProductPrice.objects.get(product=world.nut)
    assert (nut.config, nut.audit["choice"]["in_stock"]) == (world.dollars, 2)

    # The bolt's recommended price there changed (beside its best offer): computed again.
    send(
        world.roubles, [("R-1", "Болт", "900", "1400", 5), ("R-2", "Гайка", "60", "", 5)], rrp=True
    )
    assert offers.config_offers_refresh(world.roubles.pk).settled == 1  # the nut
    # ... as it is when the recommended price goes.
    send(world.roubles, [("R-1", "Болт", "900", 5), ("R-2", "Гайка", "60", 5)])
    assert offers.config_offers_refresh(world.roubles.pk).settled == 1

    # The dollar supplier's list sent again as it was: no price moves, none is computed.
    send(world.dollars, [("V-1", "Bolt", "10.50", 3), ("V-2", "Nut", "0.40", 100)])
    done = offers.config_offers_refresh(world.dollars.pk)
    assert (done.settled, done.best_changed, done.published_changed) == (2, 0, 0)
    again = offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert (again.best_changed, again.published_changed) == (0, 0)


def test_a_line_the_suppliers_next_list_leaves_out_stops_counting(world):
    """A linked line missing from the supplier's next list: its offer stays, without a
    price (it counts no more, and the operator sees that the supplier dropped it), and
    the other supplier's offer becomes the best."""
    send(
        world.roubles, [("R-1", "Болт", "900", "1500", 5), ("R-2", "Гайка", "50", "", 0)], rrp=True
    )
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert ProductPrice.objects.get(product=world.bolt).config == world.roubles
    send(world.roubles, [("R-2", "Гайка", "50", "", 0)], rrp=True)
    done = offers.config_offers_refresh(world.roubles.pk)
    assert (done.products, done.others_read) == (2, 1)  # the bolt's best was this list's
    dropped = Offer.objects.get(product=world.bolt, config=world.roubles)
    assert (dropped.status, dropped.price, dropped.currency, dropped.best) == (
        "no_price",
        None,
        "RUB",
        False,
    )
    assert Offer.objects.get(product=world.bolt, best=True).config == world.dollars
    price = ProductPrice.objects.get(product=world.bolt)
    assert (price.config, price.audit["choice"]["counted"]) == (world.dollars, 1)
    again = offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert (again.best_changed, again.published_changed) == (0, 0)


def test_a_deleted_supplier_has_every_price_computed_again(world):
    """Its offers go with it; a price that named one as the best, or counted them, is
    computed again by the refresh of everything the deletion asks for."""
    send(
        world.roubles, [("R-1", "Болт", "900", "1500", 5), ("R-2", "Гайка", "50", "", 0)], rrp=True
    )
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert ProductPrice.objects.get(product=world.bolt).config == world.roubles
    OutboxEvent.objects.all().delete()
    PriceImport.objects.filter(config=world.roubles).delete()  # (they protect the config)
    world.roubles.delete()
    assert len(events(offers.REFRESH)) == 1
    deliver_everything()
    for product in (world.bolt, world.nut):
        price = ProductPrice.objects.get(product=product)
        assert (price.config, price.audit["choice"]["offers"]) == (world.dollars, 1)
    OutboxEvent.objects.all().delete()
    Offer.objects.filter(config=world.dollars).delete()
    PriceImport.objects.filter(config=world.dollars).delete()
    world.dollars.delete()  # (no offers: nothing to compute again)
    assert events(offers.REFRESH) == []


def test_a_missing_rate_a_switched_off_supplier_and_a_stale_list_do_not_count(world):
    Rate.objects.all().delete()
    offers.offers_refresh([world.bolt.pk])
    usd = Offer.objects.get(product=world.bolt, config=world.dollars, price_type="")
    assert usd.status == "no_rate"
    assert usd.price_rub is None
    assert Offer.objects.get(product=world.bolt, best=True).config == world.roubles
    SupplierTerms.objects.create(config=world.roubles, enabled=False)
    offers.offers_refresh([world.bolt.pk])
    assert (
        Offer.objects.get(product=world.bolt, config=world.roubles, price_type="").status
        == "disabled"
    )
    price = ProductPrice.objects.get(product=world.bolt)
    assert price.status == "no_offer"
    assert price.price == D("1200.00")  # the last published price stays, not available
    assert not price.available
    SupplierTerms.objects.filter(config=world.roubles).update(enabled=True, stale_days=1)
    PriceImport.objects.filter(config=world.roubles).update(
        accepted_at=timezone.now() - timedelta(days=3)
    )
    from mailboxes.models import InboundMessage

    InboundMessage.objects.filter(imports__config=world.roubles).update(
        sent_at=timezone.now() - timedelta(days=3)
    )
    offers.offers_refresh([world.bolt.pk])
    assert (
        Offer.objects.get(product=world.bolt, config=world.roubles, price_type="").status == "stale"
    )


def test_the_recommended_price_is_respected(world):
    PriceRule.objects.update(respect_rrp=True)
    SupplierTerms.objects.filter(config=world.dollars).update(enabled=False)
    offers.offers_refresh([world.bolt.pk])
    price = ProductPrice.objects.get(product=world.bolt)
    assert price.price == D("1500.00")  # 1000 × 1.2 = 1200, below the supplier's РРЦ
    assert price.audit["steps"][-1] == ["rrp", "1500.0000", "1500.00"]


def test_an_offer_rule_by_priority_for_a_category(world):
    SupplierTerms.objects.create(config=world.roubles, priority=1)
    OfferRule.objects.create(category="Крепёж / Болты", strategy="priority")
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert Offer.objects.get(product=world.bolt, best=True).config == world.roubles
    # The nut's category has no rule of its own: the cheapest in stock.
    assert Offer.objects.get(product=world.nut, best=True).config == world.dollars


def test_a_big_move_is_held_until_approved(world):
    offers.offers_refresh([world.bolt.pk])
    PriceRule.objects.update(markup_percent=D(60))  # 963.90 × 1.6 = 1542.24: +33 %
    done = offers.offers_refresh([world.bolt.pk])
    assert done.held == 1
    price = ProductPrice.objects.get(product=world.bolt)
    assert (price.status, price.price, price.computed) == ("held", D("1157.00"), D("1543.00"))
    assert price.audit["held"]["published"] == "1157.00"
    assert len(events(offers.PRICE_CHANGED)) == 1  # the first price only
    user = get_user_model().objects.create_user("operator")
    with pytest.raises(offers.NotHeld):
        offers.price_approve(world.bolt.pk, computed=D("1500.00"), user=user)
    version = PublishedVersion.objects.get().number
    offers.price_approve(world.bolt.pk, computed=D("1543.00"), user=user)
    price.refresh_from_db()
    assert (price.status, price.price, price.approved_by) == ("published", D("1543.00"), user)
    assert PublishedVersion.objects.get().number == version + 1
    approved = events(offers.PRICE_CHANGED)[-1]
    assert approved.payload["items"][0]["price"] == "1543.00"
    assert approved.payload["items"][0]["before"] == "1157.00"
    assert price.audit["approved_by"] == "operator"
    assert price.audit["held"] == {"published": "1157.00", "hold_percent": "25.00"}
    # Computed again, it stays published, and approved while the price approved stands.
    offers.offers_refresh([world.bolt.pk])
    price.refresh_from_db()
    assert (price.status, price.approved_by) == ("published", user)
    # A new price within the hold is published; the approval was of the old one.
    PriceRule.objects.update(markup_percent=D(62))
    offers.offers_refresh([world.bolt.pk])
    price.refresh_from_db()
    assert (price.status, price.price, price.approved_by) == ("published", D("1562.00"), None)
    assert "approved_by" not in price.audit and "held" not in price.audit


def test_a_price_updated_in_place_after_the_refresh_read_it_is_still_written(world):
    offers.offers_refresh([world.bolt.pk])
    PriceRule.objects.update(markup_percent=D(30))  # 963.90 × 1.3 = 1253.07
    ran, moving = [], [True]

    def recorded(execute, sql, params, many, context):
        ran.append(sql)
        if sql is offers.UPDATE_PRICES_SQL and moving:
            # (What an approval does meanwhile: the row updated in place, its new
            # version elsewhere than the refresh read it.)
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE pricing_productprice SET computed_at = computed_at"
                    " WHERE product_id = %s",
                    [world.bolt.pk],
                )
        return execute(sql, params, many, context)

    with connection.execute_wrapper(recorded):
        done = offers.offers_refresh([world.bolt.pk])
    assert offers.MOVED_PRICES_SQL in ran  # found by its key instead
    price = ProductPrice.objects.get(product=world.bolt)
    assert (done.published_changed, price.status, price.price) == (1, "published", D("1254.00"))
    assert events(offers.PRICE_CHANGED)[-1].payload["items"][0]["price"] == "1254.00"
    # Where nothing moved the row, it is written where it was read, and only there.
    PriceRule.objects.update(markup_percent=D(35))
    ran.clear()
    moving.clear()
    with connection.execute_wrapper(recorded):
        offers.offers_refresh([world.bolt.pk])
    assert offers.UPDATE_PRICES_SQL in ran and offers.MOVED_PRICES_SQL not in ran
    assert ProductPrice.objects.get(product=world.bolt).price == D("1302.00")  # 1301.27


def test_a_product_whose_links_went_loses_its_offers(world):
    offers.offers_refresh([world.bolt.pk])
    SupplierLink.objects.filter(product=world.bolt).delete()
    offers.offers_refresh([world.bolt.pk])
    assert not Offer.objects.filter(product=world.bolt).exists()
    assert ProductPrice.objects.get(product=world.bolt).status == "no_offer"


def test_a_matched_list_reaches_the_offers_through_the_outbox(world):
    links_match(config_id=world.roubles.pk)
    deliver_everything()
    assert Offer.objects.filter(product=world.bolt, config=world.roubles).exists()
    assert ProductPrice.objects.get(product=world.nut).status == "published"
    assert OutboxEvent.objects.filter(kind="links.changed", status="SENT").exists()


def test_a_persons_decision_reaches_the_offers(world):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    user = get_user_model().objects.create_user("operator")
    line = review.Line(config_id=world.dollars.pk, sku="V-1")
    review.link_reject(line=line, product_id=world.bolt.pk, user=user)
    (event,) = OutboxEvent.objects.filter(kind="links.changed")
    assert event.payload == {"product_ids": [world.bolt.pk]}
    deliver_everything()
    best = Offer.objects.get(product=world.bolt, best=True)
    assert best.config == world.roubles
    assert not Offer.objects.filter(product=world.bolt, config=world.dollars).exists()


@pytest.mark.django_db(transaction=True)  # products_load is a durable transaction
def test_a_category_changed_by_a_reload_reaches_the_price(world, tmp_path):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    # Nuts by the catch-all rule (+20 %) until the nut is filed under bolts (+50 %).
    PriceRule.objects.update(position=10)
    PriceRule.objects.create(
        name="Болты", category="Крепёж / Болты", markup_percent=D(50), rounding="1",
        respect_rrp=False, position=1,
    )  # fmt: skip
    nut = ProductPrice.objects.get(product=world.nut)
    unpriced = Product.objects.create(own_code="P-3", name="Шайба", category="Крепёж")
    OutboxEvent.objects.all().delete()
    catalogue = tmp_path / "catalogue.csv"
    catalogue.write_text(
        "own_code;name;brand;article;barcode;unit;category\n"
        "P-2;Гайка М8;Kreps;;;шт;Крепёж / Болты\n"
        "P-3;Шайба;;;;шт;Крепёж / Шайбы\n"
    )
    call_command("products_load", str(catalogue), "--no-retire", stdout=StringIO())

    (event,) = OutboxEvent.objects.filter(kind="products.changed")
    assert event.payload == {"product_ids": sorted([world.nut.pk, unpriced.pk])}
    deliver_everything()
    repriced = ProductPrice.objects.get(product=world.nut)
    assert repriced.rule.name == "Болты"
    assert repriced.computed == (nut.cost * D("1.5")).quantize(D(1), rounding=ROUND_CEILING)
    # A product with nothing offered gets no price of "no offer" for it.
    assert not ProductPrice.objects.filter(product=unpriced).exists()


def test_a_list_that_goes_stale_is_swept_out_of_the_offers(world):
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert offers.stale_sweep() == []
    SupplierTerms.objects.create(config=world.roubles, stale_days=2)
    from mailboxes.models import InboundMessage

    InboundMessage.objects.filter(imports__config=world.roubles).update(
        sent_at=timezone.now() - timedelta(days=3)
    )
    assert offers.stale_sweep() == [world.roubles.pk]
    assert offers.stale_sweep() == []  # asked once: the refresh is waiting
    deliver_everything()
    statuses = set(Offer.objects.filter(config=world.roubles).values_list("status", flat=True))
    assert statuses == {"stale"}
    assert Offer.objects.get(product=world.bolt, best=True).config == world.dollars
    assert offers.stale_sweep() == []  # nothing counts there any more


def test_the_command_computes_everything_or_named_products(world):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("offers_refresh", "--product", "P-1", stdout=out)
    assert out.getvalue().startswith("1 products, ")
    assert ProductPrice.objects.filter(product=world.bolt).exists()
    assert not ProductPrice.objects.filter(product=world.nut).exists()
    call_command("offers_refresh", stdout=out)
    assert ProductPrice.objects.filter(product=world.nut, status="published").exists()
    with pytest.raises(CommandError, match="P-404"):
        call_command("offers_refresh", "--product", "P-404")


def test_a_refresh_of_everything_is_split_into_parts_for_the_workers(world, monkeypatch):
    monkeypatch.setattr(offers, "ALL_CHUNK", 1)
    with transaction.atomic():
        offers.refresh_requested("rules")
    deliver_everything()  # the request: one part per product, each an event of its own
    parts = OutboxEvent.objects.filter(kind=offers.REFRESH_PART).order_by("created_at", "id")
    assert [(e.payload["first"], e.payload["last"]) for e in parts] == [
        (world.bolt.pk, world.bolt.pk),
        (world.nut.pk, world.nut.pk),
    ]
    assert {e.status for e in parts} == {"SENT"}
    assert set(ProductPrice.objects.values_list("status", flat=True)) == {"published"}
