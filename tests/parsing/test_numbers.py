from __future__ import annotations

from decimal import Decimal

import pytest

from pricefeed.parsing.numbers import NumberReader, currency_in_text, float_to_decimal

NBSP, NNBSP = "\xa0", "\u202f"


@pytest.mark.parametrize(
    ("text", "value", "currency"),
    [
        ("1 234,50", "1234.50", None),
        (f"1{NBSP}234,50", "1234.50", None),
        (f"1{NNBSP}234,50", "1234.50", None),
        ("1,234.50", "1234.50", None),
        ("1.234,50", "1234.50", None),
        ("1 234 567,8", "1234567.8", None),
        ("1,234,567", "1234567", None),
        ("1.234.567", "1234567", None),
        ("1234.5 руб.", "1234.5", "RUB"),
        ("1234,5 р.", "1234.5", "RUB"),
        ("1 234 ₽", "1234", "RUB"),
        ("$1,234.50", "1234.50", "USD"),
        ("€12,50", "12.50", "EUR"),
        ("12.5 USD", "12.5", "USD"),
        ("12.5", "12.5", None),
        ("12,5", "12.5", None),
        ("-5", "-5", None),
        ("−5,25", "-5.25", None),
        ("-$5", "-5", "USD"),
        ("0,500", "0.500", None),
        ("1234", "1234", None),
        ("1'234.50", "1234.50", None),
    ],
)
def test_locale_numbers(text, value, currency):
    got, cur = NumberReader().read(text)
    assert got == Decimal(value)
    assert str(got) == value  # no binary noise, trailing zeros as written
    assert cur == currency


@pytest.mark.parametrize(
    "text", ["по запросу", "от 100", "12abc", "1,2,3", "1.23.45", "NaN", "Infinity", "--5", "—"]
)
def test_text_that_is_not_a_number_is_refused(text):
    with pytest.raises(ValueError):
        NumberReader().read(text)


@pytest.mark.parametrize("number_format", ["auto", "comma", "dot"])
@pytest.mark.parametrize("text", ["9" * 1001, "9" * 1001 + ",5", "1 " + "0" * 1200])
def test_digits_past_the_decimal_context_are_not_a_number_not_a_crash(number_format, text):
    with pytest.raises(ValueError):
        NumberReader(number_format).read(text)


@pytest.mark.parametrize(
    ("number_format", "text", "value"),
    [
        ("comma", "1,234", "1.234"),
        ("comma", "1.234", "1234"),
        ("dot", "1,234", "1234"),
        ("dot", "1.234", "1.234"),
        ("auto", "1,234", "1.234"),  # no evidence in the file: the separator is decimal
        ("auto", "1.234", "1.234"),
    ],
)
def test_a_lone_separator_before_three_digits_follows_the_option(number_format, text, value):
    assert NumberReader(number_format).read(text)[0] == Decimal(value)


def test_in_auto_mode_the_first_unambiguous_number_sets_the_convention():
    reader = NumberReader("auto")
    assert reader.read("1.234")[0] == Decimal("1.234")
    assert reader.pending  # read before the file had decided
    reader.pending = False
    assert reader.read("1 234,50")[0] == Decimal("1234.50")
    assert reader.decimal == ","
    assert reader.read("1.234")[0] == Decimal("1234")
    assert not reader.pending


def test_unambiguous_shapes_are_read_the_same_in_every_mode():
    for mode in ("auto", "comma", "dot"):
        reader = NumberReader(mode)
        assert reader.read("1 234,50")[0] == Decimal("1234.50")
        assert reader.read("1,234.50")[0] == Decimal("1234.50")
        assert reader.read("12.5")[0] == Decimal("12.5")


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", "5"), ("5 шт.", "5"), ("1 500", "1500"), ("2,5", "2.5"), ("-3", "-3")],
)
def test_quantities(text, value):
    assert NumberReader().quantity(text) == Decimal(value)


@pytest.mark.parametrize("text", ["в наличии", ">10", "много", "есть", "10+"])
def test_quantity_text_is_none_not_an_error(text):
    assert NumberReader().quantity(text) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [(10.1, "10.1"), (12345.0, "12345"), (0.1 + 0.2, "0.30000000000000004"), (1e20, "1E+20")],
)
def test_workbook_floats_become_the_decimal_that_was_typed(value, text):
    assert str(float_to_decimal(value)) == text


@pytest.mark.parametrize(
    ("header", "code"),
    [("Цена, руб.", "RUB"), ("Цена (USD)", "USD"), ("Price, $", "USD"), ("Цена", None)],
)
def test_currency_named_in_a_header(header, code):
    assert currency_in_text(header) == code
