"""A selling price's audit (ProductPrice.audit, written by pricing.offers) told as
sentences in the reader's language: which offer won and why, the cost, each step of the
rule, and why a price waits for approval."""

from __future__ import annotations

from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils.formats import date_format, number_format
from django.utils.translation import gettext

from .models import OfferRule, PriceRule


def _money(text: Any) -> str:
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return str(text)
    return number_format(value.quantize(Decimal("0.01")), 2, force_grouping=True)


def _number(text: Any) -> str:
    """A rate or a percentage as written in the reader's language, without trailing
    zeros: "91.80000000" → "91,8"."""
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return str(text)
    exponent = value.normalize().as_tuple().exponent
    places = max(-exponent, 0) if isinstance(exponent, int) else 0
    return number_format(value, places, force_grouping=True)


def _day(text: Any) -> str:
    try:
        return date_format(date.fromisoformat(str(text)), "d.m.Y")
    except ValueError:
        return str(text)


def _why(choice: dict[str, Any]) -> str:
    strategy = choice.get("strategy", "cheapest")
    label = str(dict(OfferRule.Strategy.choices).get(strategy, strategy))
    counted, offers = choice.get("counted", 0), choice.get("offers", 0)
    if choice.get("why") == "none_counts":
        return gettext("No offer counts (%(offers)s offers, none current with a price).") % {
            "offers": offers
        }
    text = gettext("Chosen as %(label)s: %(counted)s of %(offers)s offers count") % {
        "label": label,
        "counted": counted,
        "offers": offers,
    }
    if choice.get("why") == "out_of_stock":
        text += gettext(", no supplier has it in stock (shown as not available)")
    if choice.get("average_of"):
        text += gettext(", the cost is the average of %(n)s") % {"n": choice["average_of"]}
    return text + "."


STEP_TEXTS = {
    "cost": lambda setting, value: gettext("Cost: %(value)s ₽.") % {"value": value},
    "markup": lambda setting, value: (
        gettext("Markup %(setting)s %%: %(value)s ₽.")
        % {"setting": _number(setting), "value": value}
    ),
    "add": lambda setting, value: (
        gettext("Plus %(setting)s ₽: %(value)s ₽.") % {"setting": _money(setting), "value": value}
    ),
    "floor": lambda setting, value: (
        gettext("Raised to the floor, the cost plus %(setting)s %%: %(value)s ₽.")
        % {"setting": _number(setting), "value": value}
    ),
    "round": lambda setting, value: (
        gettext("Rounded %(setting)s: %(value)s ₽.")
        % {"setting": str(dict(PriceRule.Rounding.choices).get(setting, setting)), "value": value}
    ),
    "rrp": lambda setting, value: (
        gettext("Raised to the supplier's recommended price %(setting)s ₽: %(value)s ₽.")
        % {"setting": _money(setting), "value": value}
    ),
}


def explain(audit: dict[str, Any], *, supplier: str = "") -> list[str]:
    """The audit as sentences, in order."""
    lines: list[str] = []
    if not audit:
        return [gettext("Not computed yet.")]
    if "choice" in audit:
        lines.append(_why(audit["choice"]))
    offer = audit.get("offer")
    if offer:
        if offer.get("rate"):
            lines.append(
                gettext(
                    "Best offer: %(supplier)s, code %(sku)s, %(price)s %(currency)s at "
                    "%(rate)s ₽ (the rate of %(date)s with the supplier's surcharge) = "
                    "%(roubles)s ₽."
                )
                % {
                    "supplier": supplier or offer.get("config_id"),
                    "sku": offer.get("sku"),
                    "price": _money(offer.get("price")),
                    "currency": offer.get("currency"),
                    "rate": _number(offer.get("rate")),
                    "date": _day(offer.get("rate_date")),
                    "roubles": _money(offer.get("price_rub")),
                }
            )
        else:
            lines.append(
                gettext("Best offer: %(supplier)s, code %(sku)s, %(roubles)s ₽.")
                % {
                    "supplier": supplier or offer.get("config_id"),
                    "sku": offer.get("sku"),
                    "roubles": _money(offer.get("price_rub")),
                }
            )
    rule = audit.get("rule")
    if rule:
        lines.append(gettext("Price rule «%(name)s».") % {"name": rule.get("name")})
        for step, setting, value in audit.get("steps", []):
            text = STEP_TEXTS.get(step)
            if text is not None:
                lines.append(text(setting, _money(value)))
    elif offer:
        lines.append(gettext("No price rule applies to this product: no price is computed."))
    held = audit.get("held")
    if held:
        lines.append(
            gettext(
                "It differs from the published %(published)s ₽ by more than %(percent)s %%: "
                "it waits for approval."
            )
            % {
                "published": _money(held.get("published")),
                "percent": _number(held.get("hold_percent")),
            }
        )
    if audit.get("approved_by"):
        lines.append(gettext("Approved by %(user)s.") % {"user": audit["approved_by"]})
    return lines
