"""The rules of pricing, stated one product at a time: which offer of a product is the
best, and what our price is made of it, with every step kept for the audit. No
database here. pricing.offers applies them to whole sets of products in PostgreSQL
(its CHOICE_SQL and PRICES_SQL do what ``choose``, ``price_rule_for``, ``price_of`` and
``held`` say) and reads ``offer_rule_for`` and ``in_category`` here for the categories
in scope; tests/pricing/test_rules_agree.py holds the statements to these functions on
random worlds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Any, NamedTuple

CENT = Decimal("0.01")
FOURTH = Decimal("0.0001")
HUNDRED = Decimal(100)

CHEAPEST = "cheapest"
PRIORITY = "priority"
AVERAGE = "average"


class Candidate(NamedTuple):
    """One offer of a product as the choice reads it."""

    config_id: int
    price_type: str
    price_rub: Decimal | None
    in_stock: bool
    status: str
    priority: int
    quantity: Decimal | None


@dataclass(frozen=True, slots=True)
class OfferRuleSpec:
    category: str
    strategy: str
    price_type: str


@dataclass(frozen=True, slots=True)
class PriceRuleSpec:
    id: int
    name: str
    config_id: int | None
    category: str
    brand: str  # folded (casefold), empty: any
    cost_from: Decimal | None
    cost_below: Decimal | None
    markup_percent: Decimal
    fixed_add: Decimal
    rounding: str
    min_margin_percent: Decimal | None
    respect_rrp: bool
    rrp_type: str
    hold_percent: Decimal | None


DEFAULT_OFFER_RULE = OfferRuleSpec(category="", strategy=CHEAPEST, price_type="")


def in_category(category: str, prefix: str) -> bool:
    """Whether the path ``category`` is ``prefix`` or below it (levels joined by " / ";
    "Крепёж" covers "Крепёж / Болты", not "Крепёжные"). An empty prefix covers all."""
    if not prefix:
        return True
    folded, wanted = category.casefold(), prefix.casefold().strip()
    return folded == wanted or folded.startswith(wanted + " / ")


def offer_rule_for(category: str, rules: Sequence[OfferRuleSpec]) -> OfferRuleSpec:
    """The rule of the longest category prefix that covers ``category``."""
    best = DEFAULT_OFFER_RULE
    for rule in rules:
        if in_category(category, rule.category) and len(rule.category) >= len(best.category):
            best = rule
    return best


class Choice(NamedTuple):
    best: Candidate | None
    cost: Decimal | None
    available: bool
    reason: dict[str, Any]


def choose(candidates: Sequence[Candidate], rule: OfferRuleSpec) -> Choice:
    """The best of a product's offers of the rule's price type that count: in stock
    first (out of stock only when no one has it); cheapest, or of the highest priority,
    or (``average``) the cheapest with the average as the cost. Ties go to the higher
    priority, then the lower config id, so the same offers always give the same."""
    typed = [c for c in candidates if c.price_type == rule.price_type]
    counted = [c for c in typed if c.status == "ok" and c.price_rub is not None]
    reason: dict[str, Any] = {
        "strategy": rule.strategy,
        "rule_category": rule.category,
        "price_type": rule.price_type,
        "offers": len(typed),
        "counted": len(counted),
    }
    if not counted:
        reason["why"] = "none_counts"
        return Choice(None, None, False, reason)
    stocked = [c for c in counted if c.in_stock]
    pool = stocked or counted
    reason["in_stock"] = len(stocked)
    if rule.strategy == PRIORITY:
        best = min(pool, key=lambda c: (c.priority, c.price_rub, c.config_id))
    else:
        best = min(pool, key=lambda c: (c.price_rub, c.priority, c.config_id))
    cost = best.price_rub
    if rule.strategy == AVERAGE:
        total = Decimal(0)
        for counted_offer in pool:
            total += counted_offer.price_rub or 0
        cost = (total / len(pool)).quantize(FOURTH, ROUND_HALF_UP)
        reason["average_of"] = len(pool)
    reason["why"] = rule.strategy if stocked else "out_of_stock"
    return Choice(best, cost, bool(stocked), reason)


def price_rule_for(
    rules: Sequence[PriceRuleSpec], *, config_id: int, category: str, brand: str, cost: Decimal
) -> PriceRuleSpec | None:
    """The first rule (they come by position) whose every condition holds."""
    folded = brand.casefold().strip()
    for rule in rules:
        if rule.config_id is not None and rule.config_id != config_id:
            continue
        if rule.brand and rule.brand != folded:
            continue
        if rule.cost_from is not None and cost < rule.cost_from:
            continue
        if rule.cost_below is not None and cost >= rule.cost_below:
            continue
        if not in_category(category, rule.category):
            continue
        return rule
    return None


def rounded(value: Decimal, rounding: str) -> Decimal:
    """``value`` rounded up (a price never loses margin to rounding): to a step of 0.1,
    1 or 10 roubles, or to the nearest ending ,90 / ,99 not below it."""
    if rounding in ("0.1", "1", "10"):
        step = Decimal(rounding)
        return ((value / step).to_integral_value(ROUND_CEILING) * step).quantize(CENT)
    if rounding in (".90", ".99"):
        ending = Decimal("0" + rounding)
        whole = value.to_integral_value(ROUND_CEILING) - 1 + ending
        if whole < value:
            whole += 1
        return whole.quantize(CENT)
    return value.quantize(CENT, ROUND_CEILING)


class Priced(NamedTuple):
    price: Decimal
    steps: list[list[str]]


def price_of(cost: Decimal, rule: PriceRuleSpec, rrp: Decimal | None) -> Priced:
    """Our price from ``cost`` by ``rule``: the markup, the fixed add, the floor (cost plus
    the minimum margin), the rounding, then not below the recommended price. Each step
    is kept as (step, its setting, the price after it) as text for the audit (to 4
    places, half up, as PostgreSQL's round: pricing.offers computes these steps there)."""
    steps: list[list[str]] = [["cost", "", str(cost)]]
    price = cost * (1 + rule.markup_percent / HUNDRED)
    steps.append(["markup", str(rule.markup_percent), str(price.quantize(FOURTH, ROUND_HALF_UP))])
    if rule.fixed_add:
        price += rule.fixed_add
        steps.append(["add", str(rule.fixed_add), str(price.quantize(FOURTH, ROUND_HALF_UP))])
    if rule.min_margin_percent is not None:
        floor = cost * (1 + rule.min_margin_percent / HUNDRED)
        if price < floor:
            price = floor
            steps.append(
                ["floor", str(rule.min_margin_percent), str(price.quantize(FOURTH, ROUND_HALF_UP))]
            )
    price = rounded(price, rule.rounding)
    steps.append(["round", rule.rounding, str(price)])
    if rule.respect_rrp and rrp is not None and price < rrp:
        price = rrp.quantize(CENT, ROUND_CEILING)
        steps.append(["rrp", str(rrp), str(price)])
    return Priced(price, steps)


def held(published: Decimal | None, computed: Decimal, hold_percent: Decimal | None) -> bool:
    """Whether ``computed`` moves more than ``hold_percent`` from the published price (a
    first price, or a rule that never holds, is never held)."""
    if published is None or hold_percent is None or published <= 0:
        return False
    return abs(computed - published) * HUNDRED > hold_percent * published
