"""The pure rules: the best offer, our price from its cost, and when a price is held."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from pricing import rules
from pricing.rules import Candidate, OfferRuleSpec, PriceRuleSpec


def offer(config_id, price, *, in_stock=True, status="ok", priority=100, price_type=""):
    return Candidate(
        config_id, price_type, None if price is None else D(price), in_stock, status,
        priority, None,
    )  # fmt: skip


def rule(**fields) -> PriceRuleSpec:
    values = dict(
        id=1, name="r", config_id=None, category="", brand="", cost_from=None,
        cost_below=None, markup_percent=D(0), fixed_add=D(0), rounding="none",
        min_margin_percent=None, respect_rrp=True, rrp_type="rrp", hold_percent=D(25),
    )  # fmt: skip
    return PriceRuleSpec(**(values | fields))


CHEAPEST = rules.DEFAULT_OFFER_RULE


@pytest.mark.parametrize(
    ("value", "rounding", "expected"),
    [
        ("123.401", "none", "123.41"),
        ("123.41", "0.1", "123.50"),
        ("123.40", "0.1", "123.40"),
        ("123.01", "1", "124.00"),
        ("121", "10", "130.00"),
        ("120", "10", "120.00"),
        ("123.40", ".99", "123.99"),
        ("123.995", ".99", "124.99"),
        ("123.99", ".99", "123.99"),
        ("123.95", ".90", "124.90"),
        ("123.10", ".90", "123.90"),
        ("0.5", ".90", "0.90"),
    ],
)
def test_rounding_goes_up_to_the_step_or_the_ending(value, rounding, expected):
    assert rules.rounded(D(value), rounding) == D(expected)


def test_cheapest_in_stock_wins_over_a_cheaper_one_out_of_stock():
    choice = rules.choose(
        [offer(1, "10", in_stock=False), offer(2, "12"), offer(3, "11")], CHEAPEST
    )
    assert choice.best.config_id == 3
    assert choice.cost == D("11")
    assert choice.available
    assert choice.reason["why"] == "cheapest"
    assert choice.reason["in_stock"] == 2


def test_equal_prices_go_to_the_higher_priority_then_the_lower_config():
    first = rules.choose([offer(5, "10", priority=50), offer(4, "10", priority=60)], CHEAPEST)
    assert first.best.config_id == 5
    second = rules.choose([offer(5, "10"), offer(4, "10")], CHEAPEST)
    assert second.best.config_id == 4


def test_offers_that_do_not_count_are_left_out():
    choice = rules.choose(
        [offer(1, "1", status="stale"), offer(2, "2", status="no_rate"), offer(3, "9")], CHEAPEST
    )
    assert choice.best.config_id == 3
    assert choice.reason["counted"] == 1
    nothing = rules.choose([offer(1, "1", status="disabled"), offer(2, None)], CHEAPEST)
    assert nothing.best is None
    assert nothing.reason["why"] == "none_counts"
    assert not nothing.available


def test_out_of_stock_everywhere_takes_the_cheapest_unavailable():
    choice = rules.choose(
        [offer(1, "12", in_stock=False), offer(2, "10", in_stock=False)], CHEAPEST
    )
    assert choice.best.config_id == 2
    assert not choice.available
    assert choice.reason["why"] == "out_of_stock"


def test_priority_and_average_strategies():
    by_priority = OfferRuleSpec("", rules.PRIORITY, "")
    offers = [
        offer(1, "10", priority=20),
        offer(2, "30", priority=10),
        offer(3, "20", in_stock=False, priority=1),
    ]
    assert rules.choose(offers, by_priority).best.config_id == 2
    average = rules.choose(offers, OfferRuleSpec("", rules.AVERAGE, ""))
    assert average.cost == D("20")  # (10 + 30) / 2: the one out of stock is left out
    assert average.best.config_id == 1
    assert average.reason["average_of"] == 2


def test_the_rule_compares_its_price_type_only():
    offers = [offer(1, "10"), offer(2, "12"), offer(2, "5", price_type="opt")]
    assert rules.choose(offers, OfferRuleSpec("", rules.CHEAPEST, "opt")).best.config_id == 2


def test_the_longest_category_prefix_rule_applies():
    general = OfferRuleSpec("Крепёж", rules.PRIORITY, "")
    bolts = OfferRuleSpec("Крепёж / Болты", rules.AVERAGE, "")
    found = rules.offer_rule_for("Крепёж / Болты / М8", [bolts, general])
    assert found is bolts
    assert rules.offer_rule_for("крепёж / Гайки", [bolts, general]) is general
    assert rules.offer_rule_for("Крепёжные изделия", [bolts, general]) is rules.DEFAULT_OFFER_RULE


def test_the_first_price_rule_whose_conditions_hold_applies():
    cheap = rule(id=1, cost_below=D(100))
    bosch = rule(id=2, brand="bosch")
    rest = rule(id=3)
    kept = [cheap, bosch, rest]
    assert rules.price_rule_for(kept, config_id=1, category="", brand="Bosch", cost=D(50)).id == 1
    assert rules.price_rule_for(kept, config_id=1, category="", brand="Bosch", cost=D(100)).id == 2
    assert rules.price_rule_for(kept, config_id=1, category="", brand="Kreps", cost=D(100)).id == 3
    only_two = rule(id=4, config_id=2, category="Крепёж")
    assert (
        rules.price_rule_for([only_two], config_id=1, category="Крепёж", brand="", cost=D(1))
        is None
    )
    assert (
        rules.price_rule_for([only_two], config_id=2, category="Крепёж", brand="", cost=D(1)).id
        == 4
    )


def test_price_steps_markup_add_floor_rounding_rrp():
    priced = rules.price_of(
        D("100"), rule(markup_percent=D(10), fixed_add=D(5), rounding=".99"), None
    )
    assert priced.price == D("115.99")
    assert [step[0] for step in priced.steps] == ["cost", "markup", "add", "round"]
    floored = rules.price_of(D("100"), rule(markup_percent=D(2), min_margin_percent=D(15)), None)
    assert floored.price == D("115.00")
    assert floored.steps[-2][0] == "floor"
    with_rrp = rules.price_of(D("100"), rule(markup_percent=D(10), rounding="1"), D("149.90"))
    assert with_rrp.price == D("149.90")
    assert with_rrp.steps[-1] == ["rrp", "149.90", "149.90"]
    ignored = rules.price_of(D("100"), rule(markup_percent=D(10), respect_rrp=False), D("149.90"))
    assert ignored.price == D("110.00")


def test_a_move_beyond_the_share_is_held():
    assert rules.held(D(100), D(126), D(25))
    assert not rules.held(D(100), D(125), D(25))
    assert rules.held(D(100), D(74), D(25))
    assert not rules.held(None, D(1000), D(25))
    assert not rules.held(D(100), D(1000), None)
