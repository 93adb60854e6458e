"""Conversion to roubles at a list's date: the newest rate within the window, a manual
one before the bank's of its date, the supplier's surcharge, roubles as they are, and
no rate as a result of its own."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.utils import translation

from pricing.models import Rate, SupplierTerms
from pricing.selectors import Converted, MissingRate, rate_on, to_roubles
from tests.factories import create_config, create_mailbox

pytestmark = pytest.mark.django_db

DEC1 = date(2026, 12, 1)
DEC2 = date(2026, 12, 2)


def rate(currency: str, day: date, value: str, source=Rate.Source.CBR) -> Rate:
    return Rate.objects.create(currency=currency, date=day, rate=Decimal(value), source=source)


def test_the_newest_rate_on_or_before_the_date_converts():
    rate("USD", date(2026, 11, 30), "77")
    rate("USD", DEC1, "78")
    rate("USD", date(2026, 12, 3), "79")  # after the list's date

    result = to_roubles(Decimal("10"), "usd", on=DEC2)

    assert isinstance(result, Converted)
    assert result.roubles == Decimal("780")
    assert result.rate is not None and result.rate.date == DEC1


def test_a_manual_rate_wins_over_the_banks_of_the_same_date():
    rate("USD", DEC2, "78")
    manual = rate("USD", DEC2, "80", source=Rate.Source.MANUAL)
    rate("USD", DEC1, "90", source=Rate.Source.MANUAL)

    assert rate_on("USD", DEC2) == manual


def test_a_newer_banks_rate_wins_over_an_older_manual_one():
    rate("USD", DEC1, "80", source=Rate.Source.MANUAL)
    newer = rate("USD", DEC2, "78")

    assert rate_on("USD", DEC2) == newer


def test_the_suppliers_surcharge_is_added_to_the_rate():
    config = create_config(create_mailbox())
    SupplierTerms.objects.create(config=config, rate_surcharge=Decimal("2"))
    rate("JPY", DEC2, "0.512345")

    result = to_roubles(Decimal("1000"), "JPY", on=DEC2, config_id=config.pk)

    assert isinstance(result, Converted)
    assert result.surcharge == Decimal("2")
    assert result.effective_rate == Decimal("0.512345") * Decimal("1.02")
    assert result.roubles == Decimal("1000") * Decimal("0.512345") * Decimal("1.02")


def test_a_supplier_without_terms_has_no_surcharge():
    config = create_config(create_mailbox())
    rate("USD", DEC2, "78")

    result = to_roubles(Decimal("1"), "USD", on=DEC2, config_id=config.pk)

    assert isinstance(result, Converted) and result.roubles == Decimal("78")


def test_a_rate_older_than_the_window_is_no_rate(settings):
    settings.PRICEFEED_RATES_WINDOW_DAYS = 7
    rate("USD", date(2026, 11, 25), "78")  # eight days before
    rate("EUR", date(2026, 11, 26), "90")  # seven days before: the window's oldest day

    assert isinstance(to_roubles(Decimal("1"), "USD", on=DEC2), MissingRate)
    assert isinstance(to_roubles(Decimal("1"), "EUR", on=DEC2), Converted)


def test_a_missing_rate_says_which_and_when_and_is_never_one():
    result = to_roubles(Decimal("5"), "USD", on=DEC2)

    assert result == MissingRate(currency="USD", on=DEC2)
    with translation.override("ru"):
        assert str(result) == "нет курса USD на 02.12.2026"
    with translation.override("en"):
        assert str(result) == "no USD rate on 02.12.2026"


@pytest.mark.parametrize("code", ["RUB", "rub", "RUR"])
def test_roubles_convert_as_themselves_without_a_surcharge(code):
    config = create_config(create_mailbox())
    SupplierTerms.objects.create(config=config, rate_surcharge=Decimal("2"))

    result = to_roubles(Decimal("123.45"), code, on=DEC2, config_id=config.pk)

    assert isinstance(result, Converted)
    assert (result.roubles, result.currency, result.rate) == (Decimal("123.45"), "RUB", None)
