"""Rates read: the rate in effect on a day, and an amount converted to roubles.

The rule (docs/pricing.md): the newest rate dated on or before the list's date, no
older than ``PRICEFEED_RATES_WINDOW_DAYS``, a manual rate before the bank's of the same
date; then the supplier's surcharge ("ЦБ + 2 %") on it. Roubles are roubles. No rate is
a result of its own (``MissingRate``), never a rate of 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection
from django.db.models import Case, IntegerField, Value, When
from django.utils.formats import date_format
from django.utils.translation import gettext

from .models import Rate, SupplierTerms

ROUBLE = "RUB"
# Codes suppliers still write for the rouble (RUR: before the 1998 redenomination's code).
ROUBLE_ALIASES = {"RUB", "RUR"}


@dataclass(frozen=True)
class Converted:
    """An amount in roubles and how it was had: the rate used (its date and source; none
    for roubles), the supplier's surcharge in percent, the rate with it."""

    roubles: Decimal
    currency: str
    rate: Rate | None
    surcharge: Decimal
    effective_rate: Decimal


@dataclass(frozen=True)
class MissingRate:
    """No rate of ``currency`` in effect on ``on`` (within the window): the amount has
    no price in roubles. Its text is what a page shows."""

    currency: str
    on: date

    def __str__(self) -> str:
        return gettext("no %(currency)s rate on %(date)s") % {
            "currency": self.currency,
            "date": date_format(self.on, "d.m.Y"),
        }


def rate_on(currency: str, on: date, *, window_days: int | None = None) -> Rate | None:
    """The rate of ``currency`` in effect on ``on``: the newest dated on or before it
    within the window, a manual one before the bank's of the same date; None if none."""
    days = settings.PRICEFEED_RATES_WINDOW_DAYS if window_days is None else window_days
    return (
        Rate.objects.filter(
            currency=currency.upper(), date__lte=on, date__gt=on - timedelta(days=days)
        )
        .annotate(
            manual_first=Case(
                When(source=Rate.Source.MANUAL, then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        .order_by("-date", "manual_first")
        .first()
    )


def surcharge_of(config_id: int | None) -> Decimal:
    """The supplier's surcharge on the rate in percent (0 without terms)."""
    if config_id is None:
        return Decimal(0)
    found = (
        SupplierTerms.objects.filter(config_id=config_id)
        .values_list("rate_surcharge", flat=True)
        .first()
    )
    return Decimal(0) if found is None else found


def to_roubles(
    amount: Decimal, currency: str, *, on: date, config_id: int | None = None
) -> Converted | MissingRate:
    """``amount`` of ``currency`` in roubles on ``on`` (a list's date), at the rate in
    effect then plus the surcharge of the supplier whose config is ``config_id``."""
    code = currency.strip().upper()
    if code in ROUBLE_ALIASES:
        return Converted(
            roubles=amount,
            currency=ROUBLE,
            rate=None,
            surcharge=Decimal(0),
            effective_rate=Decimal(1),
        )
    rate = rate_on(code, on)
    if rate is None:
        return MissingRate(currency=code, on=on)
    surcharge = surcharge_of(config_id)
    effective = rate.rate * (1 + surcharge / 100)
    return Converted(
        roubles=amount * effective,
        currency=code,
        rate=rate,
        surcharge=surcharge,
        effective_rate=effective,
    )


@dataclass(frozen=True)
class PricesSummary:
    """What the front page counts: prices waiting for approval, offers waiting for a
    rate and of how many currencies (each through a partial index)."""

    held: int
    no_rate_offers: int
    no_rate_currencies: int


def prices_summary() -> PricesSummary:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM pricing_productprice WHERE status = 'held'),"
            " count(*), count(DISTINCT currency) FROM pricing_offer WHERE status = 'no_rate'"
        )
        held, no_rate, currencies = cursor.fetchone()
    return PricesSummary(held, no_rate, currencies)
