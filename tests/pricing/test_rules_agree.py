"""pricing.offers chooses and prices whole sets of products in PostgreSQL; pricing.rules
states the same rules one product at a time. Here random worlds (suppliers with
priorities, surcharges, a dollar list, stock as figures and as words, recommended and
wholesale prices beside the main one; offer rules by category; price rules with every
condition and step) are refreshed, repriced and refreshed again, and every product's
best offer, reason, price, status and audit steps must be what the rules say."""

from __future__ import annotations

import random
from decimal import Decimal as D

import pytest
from django.db import connection
from django.utils import timezone

from mailboxes.models import InboundMessage
from pricefeed.models import PriceImport, PriceItem
from pricing import offers, rules
from pricing.models import Offer, OfferRule, PriceRule, ProductPrice, Rate, SupplierTerms
from products.models import Product, SupplierLink
from tests.factories import create_config, create_mailbox

CATEGORIES = ["Крепёж / Болты", "Крепёж / Гайки", "Крепёжные изделия", "Инструмент", ""]
BRANDS = ["Bosch", "BOSCH ", "Kreps", ""]
ROUNDINGS = [choice for choice, _ in PriceRule.Rounding.choices]
PRODUCTS = 60


def _money(rng: random.Random, low: int = 1, high: int = 5000) -> D:
    return D(rng.randint(low * 100, high * 100)) / 100


def _world(rng: random.Random, *, id_step: int = 0) -> list[int]:
    """Products, three suppliers' current lists, links, rates and rules; the products'
    ids (with ``id_step``: made ``id_step`` apart, from far above the sequence's)."""
    now = timezone.now()
    Rate.objects.create(currency="USD", date=timezone.localdate(), rate=D("91.5"))
    products = [
        Product.objects.create(
            **({"id": 10**9 + n * id_step} if id_step else {}),
            own_code=f"P-{n}",
            name=f"Товар {n}",
            brand=rng.choice(BRANDS),
            category=rng.choice(CATEGORIES),
        )
        for n in range(PRODUCTS)
    ]
    # Some products at one price from both rouble suppliers: ties for the tie-breaks.
    tied = {product.pk: _money(rng) for product in products if rng.random() < 0.3}
    for n, currency in enumerate(["RUB", "USD", "RUB"]):
        config = create_config(create_mailbox(name=f"box{n}"), name=f"Поставщик {n}")
        SupplierTerms.objects.create(
            config=config,
            priority=rng.choice([1, 100]),
            rate_surcharge=rng.choice([D(0), D("2.5")]),
            enabled=n != 2 or rng.random() < 0.7,
        )
        message = InboundMessage.objects.create(
            mailbox=config.mailbox, folder="INBOX", uidvalidity=1, uid=1,
            message_id=f"<w{n}@t>", dedup_key=f"w{n}", status="DONE", sent_at=now,
        )  # fmt: skip
        price_import = PriceImport.objects.create(
            message=message, config=config, attachment_key="part1", filename="w.csv",
            status="SUCCEEDED", accepted_at=now,
        )  # fmt: skip
        for row, product in enumerate(products):
            if rng.random() < 0.25:
                continue
            prices = {}
            if rng.random() < 0.5:
                prices["rrp"] = {"price": str(_money(rng, 100, 9000)), "currency": "RUB"}
            if rng.random() < 0.3:
                prices["opt"] = {"price": str(_money(rng)), "currency": ""}
            PriceItem.objects.create(
                id=(price_import.pk << 32) + row, price_import=price_import, config=config,
                sku=f"S{row}", name=product.name, row_number=row + 1, valid_from=now,
                price=(
                    tied[product.pk]
                    if currency == "RUB" and product.pk in tied
                    else None
                    if rng.random() < 0.05
                    else _money(rng, 1, 60 if n == 1 else 5000)
                ),
                currency=currency, quantity=rng.choice([None, D(0), D(3), D(40)]),
                stock_kind=rng.choice(["", "", "no", "yes", "at_least"]), prices=prices,
            )  # fmt: skip
            SupplierLink.objects.create(
                config=config, supplier_sku=f"S{row}", product=product, kind="barcode",
                state=rng.choice(["auto", "confirmed"]), confidence=D("0.99"),
            )  # fmt: skip
    OfferRule.objects.create(category="Крепёж", strategy="priority")
    OfferRule.objects.create(category="Крепёж / Гайки", strategy="cheapest", price_type="opt")
    OfferRule.objects.create(category="Инструмент", strategy="average")
    configs = [None, *SupplierTerms.objects.values_list("config_id", flat=True)]
    for position in range(5):
        cost_from = rng.choice([None, None, D(500)])
        PriceRule.objects.create(
            name=f"Правило {position}",
            position=position,
            enabled=rng.random() < 0.9,
            config_id=rng.choice(configs),
            category=rng.choice(["", "", "Крепёж", "крепёж / болты", "Инструмент"]),
            brand=rng.choice(["", "", "bosch", "Kreps"]),
            cost_from=cost_from,
            cost_below=rng.choice([None, D(3000)]) if cost_from is None else None,
            markup_percent=D(rng.choice([0, 12, 25, 33])) + rng.choice([D(0), D("0.5")]),
            fixed_add=rng.choice([D(0), D(0), D("15.50")]),
            rounding=rng.choice(ROUNDINGS),
            min_margin_percent=rng.choice([None, D(10), D(40)]),
            respect_rrp=rng.random() < 0.6,
            rrp_type=rng.choice(["rrp", "rrp", "opt"]),
            hold_percent=rng.choice([None, D(10), D(25)]),
        )
    return [product.pk for product in products]


def _reprice(rng: random.Random) -> None:
    """Some current lines at a new price or stock, as if edited in place."""
    for item in PriceItem.objects.all():
        if rng.random() < 0.4:
            item.price = _money(rng, 1, 60 if item.currency == "USD" else 5000)
            item.quantity = rng.choice([None, D(0), D(7)])
            item.save(update_fields=["price", "quantity"])


def _expected(product: Product, published_before: D | None):
    """What the rules say of ``product`` from its offers as stored."""
    priority = dict(SupplierTerms.objects.values_list("config_id", "priority"))
    stored = list(Offer.objects.filter(product=product))
    candidates = [
        rules.Candidate(
            o.config_id,
            o.price_type,
            o.price_rub,
            o.in_stock,
            o.status,
            priority.get(o.config_id, 100),
            o.quantity,
        )
        for o in stored
    ]
    offer_rules = [
        rules.OfferRuleSpec(r.category.strip(), r.strategy, r.price_type)
        for r in OfferRule.objects.all()
    ]
    choice = rules.choose(candidates, rules.offer_rule_for(product.category, offer_rules))
    if choice.best is None:
        return choice, None, None
    specs = offers._price_rules()
    rule = rules.price_rule_for(
        specs,
        config_id=choice.best.config_id,
        category=product.category,
        brand=product.brand,
        cost=choice.cost,
    )
    if rule is None:
        return choice, None, None
    rrp = next(
        (
            o.price_rub
            for o in stored
            if o.config_id == choice.best.config_id
            and o.price_type == rule.rrp_type
            and o.status == "ok"
        ),
        None,
    )
    result = rules.price_of(choice.cost, rule, rrp)
    held = (
        rules.held(published_before, result.price, rule.hold_percent)
        and published_before != result.price
    )
    return choice, rule, (result, held)


def _check(product_ids: list[int], published_before: dict[int, D | None]) -> dict[str, int]:
    seen = {"best": 0, "no_offer": 0, "no_rule": 0, "held": 0, "published": 0, "steps": 0}
    for product in Product.objects.filter(pk__in=product_ids):
        before = published_before.get(product.pk)
        choice, rule, priced = _expected(product, before)
        best = list(Offer.objects.filter(product=product, best=True))
        price = ProductPrice.objects.get(product=product)
        assert price.audit["choice"] == choice.reason, product.own_code
        if choice.best is None:
            assert best == [], product.own_code
            assert (price.status, price.price, price.available) == ("no_offer", before, False)
            seen["no_offer"] += 1
            continue
        (marked,) = best
        assert (marked.config_id, marked.price_type) == (
            choice.best.config_id,
            choice.best.price_type,
        ), product.own_code
        assert marked.reason == choice.reason
        assert price.cost == choice.cost
        seen["best"] += 1
        if rule is None:
            assert (price.status, price.price, price.rule_id) == ("no_rule", before, None)
            seen["no_rule"] += 1
            continue
        result, held = priced
        assert price.rule_id == rule.id, product.own_code
        assert price.computed == result.price, product.own_code
        assert price.audit["steps"] == result.steps, product.own_code
        seen["steps"] += len(result.steps)
        if held:
            assert (price.status, price.price) == ("held", before), product.own_code
            seen["held"] += 1
        else:
            assert (price.status, price.price) == ("published", result.price), product.own_code
            assert price.available == choice.available
            seen["published"] += 1
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_the_statements_choose_and_price_as_the_rules_say(db, no_queue, seed):
    rng = random.Random(seed)
    product_ids = _world(rng)
    offers.offers_refresh(product_ids)
    first = _check(product_ids, {})
    assert first["best"] and first["published"], first
    published = dict(ProductPrice.objects.values_list("product_id", "price"))
    _reprice(rng)
    PriceRule.objects.filter(hold_percent__isnull=True).update(hold_percent=D(5))
    offers.offers_refresh(product_ids)
    second = _check(product_ids, published)
    assert second["best"] and second["steps"], second


def test_the_worlds_reach_every_branch(db, no_queue):
    """Over the seeds above, each outcome and each step of a price happens (so that the
    agreement is not of a few easy cases)."""
    outcomes: dict[str, int] = {}
    steps: set[str] = set()
    for seed in range(6):
        with connection.cursor() as cursor:
            cursor.execute("SAVEPOINT world")
        rng = random.Random(seed)
        product_ids = _world(rng)
        offers.offers_refresh(product_ids)
        published = dict(ProductPrice.objects.values_list("product_id", "price"))
        _reprice(rng)
        PriceRule.objects.filter(hold_percent__isnull=True).update(hold_percent=D(5))
        offers.offers_refresh(product_ids)
        for key, count in _check(product_ids, published).items():
            outcomes[key] = outcomes.get(key, 0) + count
        for price in ProductPrice.objects.all():
            steps.update(step[0] for step in price.audit.get("steps", []))
        with connection.cursor() as cursor:
            cursor.execute("ROLLBACK TO SAVEPOINT world")
    assert all(outcomes[key] for key in ("no_offer", "no_rule", "held", "published")), outcomes
    assert steps == {"cost", "markup", "add", "floor", "round", "rrp"}, steps


def _prices(products: set[int] | None = None) -> dict[int, tuple]:
    return {
        p.product_id: (
            p.status, p.price, p.computed, p.cost, p.available, p.quantity, p.config_id,
            p.rule_id, p.audit,
        )
        for p in ProductPrice.objects.all()
        if products is None or p.product_id in products
    }  # fmt: skip


def _offers() -> dict[tuple, tuple]:
    return {
        (o.product_id, o.config_id, o.price_type): (
            o.price_rub,
            o.in_stock,
            o.status,
            o.best,
            o.reason,
        )
        for o in Offer.objects.all()
    }


def _edit(rng: random.Random, config_id: int) -> None:
    """Some of a supplier's current lines at a new price or stock, some ended, some
    ended lines current again."""
    for item in PriceItem.objects.filter(config_id=config_id):
        draw = rng.random()
        if item.valid_to is not None:
            if draw < 0.5:
                item.valid_to = None
                item.save(update_fields=["valid_to"])
        elif draw < 0.3:
            item.price = _money(rng, 1, 60 if item.currency == "USD" else 5000)
            item.quantity = rng.choice([None, D(0), D(7)])
            item.save(update_fields=["price", "quantity"])
        elif draw < 0.36:
            item.valid_to = timezone.now()
            item.save(update_fields=["valid_to"])


@pytest.mark.parametrize("seed", range(4))
def test_a_suppliers_refresh_leaves_only_prices_that_computing_again_would_not_move(
    db, no_queue, seed
):
    """After a supplier's lines change, its refresh computes some prices and leaves the
    settled ones as they are, and reads the other suppliers' offers only for products
    whose price does not say enough of them; computing every offer and price again then
    changes none, whatever the refreshes before it did (several in a row, lines that
    went and came back, an offer rule changed with no refresh of everything yet)."""
    rng = random.Random(seed)
    product_ids = _world(rng)
    PriceRule.objects.filter(hold_percent__isnull=True).update(hold_percent=D(5))
    offers.offers_refresh(product_ids)
    configs = sorted(SupplierTerms.objects.values_list("config_id", flat=True))
    settled = computed = read = products = 0
    for round_no in range(9):
        refreshed = [rng.choice(configs) for _ in range(1 + round_no % 3)]
        if round_no == 5:
            # An offer rule changed (as an operator's change would be before the refresh
            # of everything it asks for runs) and every supplier's list refreshed.
            OfferRule.objects.filter(strategy="priority").update(strategy="cheapest")
            OfferRule.objects.filter(strategy="average").update(price_type="opt")
            refreshed = configs
        for config_id in refreshed:
            _edit(rng, config_id)
            done = offers.config_offers_refresh(config_id)
            settled += done.settled
            computed += done.products - done.settled
            read += done.others_read
            products += done.products
        # (a product no supplier offers, in no supplier's refresh, is left to the refresh
        # of everything the rule's change asks for)
        offered = set(Offer.objects.values_list("product_id", flat=True))
        before, before_offers = _prices(offered), _offers()
        again = offers.offers_refresh(product_ids)
        assert _offers() == before_offers, round_no
        assert _prices(offered) == before, round_no
        assert (again.best_changed, again.published_changed) == (0, 0), round_no
    assert settled and computed, (settled, computed)
    assert 0 < read < products, (read, products)
