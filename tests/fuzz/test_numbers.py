"""Properties of pricefeed.parsing.numbers: a Decimal written in the comma or the dot
style reads back as itself, every digit kept; any other text is a ValueError (read) or
None (quantity), never another exception."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pricefeed.parsing.numbers import (
    CURRENCY_TOKENS,
    LIMIT,
    NumberReader,
    float_to_decimal,
)

from .strategies import GROUP_SPACES, formatted, prices

MINUSES = st.sampled_from(["-", "\u2212"])  # ASCII hyphen-minus, Unicode minus
# "1 234,50", "1.234,50", "1234,50"; and "1,234.50", "1'234.50", "1 234.50", "1234.50".
COMMA_GROUPS = st.sampled_from([*GROUP_SPACES, "."])
DOT_GROUPS = st.sampled_from([*GROUP_SPACES, ",", "'"])
SYMBOLS = sorted(t for t in CURRENCY_TOKENS if not t.isalpha())
WORDS = sorted(t for t in CURRENCY_TOKENS if t.isalpha())
# Text that is nearly a number: pieces of numbers, of currencies, of Decimal's own
# syntax ("NaN", "Infinity", "1E5", "1_000") that a price list never means as such.
NUMBERISH = st.lists(
    st.sampled_from(
        ["-", "+", "0", "1", "7", "234", "5000", ",", ".", " ", "\xa0", "'", "\u2212", "e",
         "E5", "_", "NaN", "sNaN", "Inf", "Infinity", "руб", "$", "€", "шт", "..", ",,"]
    ),
    min_size=1,
    max_size=6,
).map("".join)  # fmt: skip


def reads_as(text: str, number_format: str, value: Decimal) -> bool:
    got, currency = NumberReader(number_format).read(text)
    return currency is None and f"{got:f}" == f"{value:f}"


@given(prices, COMMA_GROUPS, MINUSES)
def test_comma_style_reads_back_every_digit(value, grouping, minus):
    text = formatted(value, decimal=",", grouping=grouping, minus=minus)
    assert reads_as(text, "comma", value), text


@given(prices, DOT_GROUPS, MINUSES)
def test_dot_style_reads_back_every_digit(value, grouping, minus):
    text = formatted(value, decimal=".", grouping=grouping, minus=minus)
    assert reads_as(text, "dot", value), text


@given(prices, st.booleans(), st.data())
def test_auto_reads_every_number_of_a_file_once_one_has_decided(value, comma, data):
    """In "auto" a number is read as written unless its shape is ambiguous and nothing
    decided the file's convention yet (then it is marked pending, for a re-read); after
    an unambiguous number, every number of that style reads as written."""
    decimal, anchor = (",", "1 234,50") if comma else (".", "1,234.50")
    grouping = data.draw(COMMA_GROUPS if comma else DOT_GROUPS)
    text = formatted(value, decimal=decimal, grouping=grouping)
    first = NumberReader("auto")
    got = first.read(text)[0]
    assert first.pending or f"{got:f}" == f"{value:f}", text
    reader = NumberReader("auto")
    reader.read(anchor)
    assert f"{reader.read(text)[0]:f}" == f"{value:f}", text
    assert not reader.pending


@given(prices, st.sampled_from(SYMBOLS), st.sampled_from(WORDS + SYMBOLS), st.booleans())
def test_currency_before_or_after_the_number_is_read_with_it(value, symbol, word, before):
    number = formatted(abs(value), decimal=",", grouping=" ")
    sign = "-" if value < 0 else ""
    text = f"{sign}{symbol}{number}" if before else f"{sign}{number} {word}."
    got, currency = NumberReader("comma").read(text)
    assert f"{got:f}" == f"{value:f}", text
    assert currency == CURRENCY_TOKENS[symbol if before else word]


@given(st.one_of(NUMBERISH, st.text(max_size=12)), st.sampled_from(["auto", "comma", "dot"]))
def test_any_text_is_a_finite_number_or_a_value_error(text, number_format):
    text = text.strip()
    if not text:
        return  # read() takes stripped, non-empty text
    reader = NumberReader(number_format)
    try:
        value, currency = reader.read(text)
    except ValueError:
        pass
    else:
        assert value.is_finite(), text
        assert currency is None or currency in CURRENCY_TOKENS.values()
    quantity = NumberReader(number_format).quantity(text)
    assert quantity is None or (quantity.is_finite() and -LIMIT < quantity < LIMIT)


@given(
    st.sampled_from(["NaN", "sNaN", "nan"]),
    st.integers(0, 99),
    st.sampled_from(["auto", "comma", "dot"]),
)
@example("NaN", 1, "comma")
def test_nan_is_not_a_number(nan, digits, number_format):
    """Found by test_any_text_is_a_finite_number_or_a_value_error: "-NaN1" once read as
    Decimal("-NaN1"), and parse() raised InvalidOperation on such a cell."""
    with pytest.raises(ValueError):
        NumberReader(number_format).read(f"-{nan}{digits}")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_workbook_float_becomes_the_decimal_that_reads_back_as_it(value):
    d = float_to_decimal(value)
    assert float(d) == value or (value == 0 and d == 0)
    assert not math.isinf(float(d))
