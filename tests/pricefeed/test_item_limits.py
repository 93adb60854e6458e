"""The parsing library's idea of what the price table stores is the model's own: a value
that passes the parser's checks never fails the COPY."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from pricefeed import parsing
from pricefeed.models import PriceItem
from pricefeed.parsing.numbers import LIMIT


def field(name: str):
    return PriceItem._meta.get_field(name)


def test_text_lengths_are_the_models():
    assert parsing.SKU_MAX_LENGTH == field("sku").max_length
    assert parsing.CURRENCY_MAX_LENGTH == field("currency").max_length
    assert parsing.NAME_MAX_LENGTH == field("name").max_length  # None: a text column


def test_number_precision_is_the_models():
    for name in ("price", "quantity"):
        assert (parsing.NUMBER_MAX_DIGITS, parsing.NUMBER_DECIMAL_PLACES) == (
            field(name).max_digits,
            field(name).decimal_places,
        )


def test_the_price_limit_is_the_smallest_value_that_rounds_out_of_the_column():
    """PostgreSQL rounds half away from zero to the column's places, then checks digits."""
    places = Decimal(1).scaleb(-parsing.NUMBER_DECIMAL_PLACES)
    whole = Decimal(10) ** (parsing.NUMBER_MAX_DIGITS - parsing.NUMBER_DECIMAL_PLACES)
    assert LIMIT.quantize(places, ROUND_HALF_UP) == whole  # rounds up: refused
    assert (LIMIT - Decimal("1e-9")).quantize(places, ROUND_HALF_UP) < whole
