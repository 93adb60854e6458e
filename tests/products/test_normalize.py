"""products.normalize: what suppliers write differently and means the same thing is one
form; what differs in a decisive attribute is told apart."""

from __future__ import annotations

import pytest

from products.normalize import (
    article_key,
    attributes,
    brand_key,
    conflicts,
    name_key,
    name_words,
    number,
    parse_name,
)


@pytest.mark.parametrize(
    "written",
    ["AB-0012.3", "ав 12/3", "АВ-00123", "ab.12.3", "A B 001 2 3"],
)
def test_articles_with_look_alikes_separators_and_leading_zeros_are_one_key(written):
    assert article_key(written) == "AB123"


def test_an_article_of_other_digits_is_another_key():
    assert article_key("AB-124") != article_key("AB-123")


def test_brands_compare_without_case_separators_or_mixed_alphabets():
    assert brand_key("Зубр") == brand_key("ЗУБР") == brand_key("зуБр")
    assert brand_key("Tech-Krep") == brand_key("TECH KREP")
    # A Cyrillic word typed with a Latin "К" and "Р" is the Cyrillic word.
    assert brand_key("KРАФТ") == brand_key("КРАФТ")  # a Latin K


@pytest.mark.parametrize("written", ["М8х40", "M8x40", "M8*40", "м8 x 40", "M8Х40", "М8×40"])
def test_sizes_written_every_way_are_one_size(written):
    assert attributes(f"Болт {written} DIN 933")["size"] == "m8x40"


def test_decimal_sizes_read_with_a_comma_or_a_point():
    assert attributes("Саморез 4,2х16")["size"] == attributes("Саморез 4.2 x 16")["size"]


@pytest.mark.parametrize(
    ("one", "other", "attribute"),
    [
        ("Эмаль ПФ-115 белая 0,5 л", "Эмаль ПФ-115 белая 500 мл", "volume"),
        ("Молоток 0,5 кг", "Молоток 500 г", "weight"),
        ("Дюбель 6х40 (100 шт)", "Дюбель 6х40 уп.100шт", "pack"),
        ("Кабель ВВГ 3х1,5 100 м", "Кабель ВВГ 3х1.5 100м", "length"),
        ("Лампа 10 Вт", "Лампа 10Вт", "power"),
        ("Автомат 1P 16 А", "Автомат 1P 16А", "current"),
        ("Эмаль белая", "Эмаль бел.", "colour"),
    ],
)
def test_decisive_attributes_spelled_otherwise_are_the_same(one, other, attribute):
    assert attributes(one)[attribute] == attributes(other)[attribute]
    assert not conflicts(attributes(one), attributes(other))


@pytest.mark.parametrize(
    ("one", "other", "attribute"),
    [
        ("Болт М8х40", "Болт М8х45", "size"),
        ("Эмаль ПФ-115 белая 0,5 л", "Эмаль ПФ-115 белая 0,9 л", "volume"),
        ("Дюбель 6х40 (100 шт)", "Дюбель 6х40 (50 шт)", "pack"),
        ("Эмаль ПФ-115 белая 0,5 л", "Эмаль ПФ-115 черная 0,5 л", "colour"),
    ],
)
def test_a_decisive_attribute_that_differs_is_a_conflict(one, other, attribute):
    differed = conflicts(attributes(one), attributes(other))
    assert [d["attribute"] for d in differed] == [attribute]


def test_an_attribute_only_one_side_states_is_no_conflict():
    assert not conflicts(attributes("Болт М8х40 (100 шт)"), attributes("Болт М8х40"))


def test_names_with_abbreviations_ё_case_and_look_alikes_have_the_same_words():
    ours = name_key(name_words("Болт М8х40 DIN 933 оцинкованный (100 шт)"))
    theirs = name_key(name_words("БОЛТ оцинк. M8*40 DIN933 уп.100шт"))
    assert ours == name_key(set(name_words("болт оцинкованный din 933 М8х40 100 шт")))
    assert set(theirs.split()) - set(ours.split()) == {"упаков"}
    assert name_words("Ёрш") == name_words("ерш")
    # A Cyrillic word typed with Latin look-alikes.
    assert name_words("бoлт") == name_words("болт")


def test_word_order_does_not_change_the_name_key():
    assert name_key(name_words("Сверло по металлу HSS 6 мм")) == name_key(
        name_words("HSS 6 мм сверло по металлу")
    )


def test_numbers_compare_without_trailing_zeros_or_a_decimal_comma():
    assert number("4,50") == number("4.5") == "4.5"
    assert number("08") == "8"


def test_a_hostile_name_is_read_up_to_its_first_thousand_characters():
    assert "m8x40" in parse_name("Болт М8х40 " + "1х" * 100_000).attributes["size"].split(",")
    assert len(parse_name("а " * 100_000).words) <= 1000


def test_a_name_cannot_write_a_decisive_attribute_in_the_form_the_words_keep_it():
    # "size:m8x40" is how a stated size is kept among the words; a name that writes
    # that form itself gets only words from it (and a size only where it states one).
    forged = parse_name("Болт size:abc colour:white")
    assert "size:abc" not in forged.words and "colour:white" not in forged.words
    assert forged.attributes == {}
    assert parse_name("Болт size:m8x40").attributes == {"size": "m8x40"}
    assert "size:m8x40" in parse_name("Болт М8х40").words


def test_a_names_words_are_the_same_whatever_was_read_before():
    """The words of a piece first seen (a series code) are made of its runs' cached
    words: the same as when nothing was cached."""
    from products import normalize

    names = ["Саморез по дер. 4,2х16 ав-0012 оцинк.", "ав-0012 черн. гайка М8", "ав 0012"]
    warm = [parse_name(name) for name in names]
    normalize._raw_words.cache_clear()
    normalize._part_words.cache_clear()
    normalize._word.cache_clear()
    cold = [parse_name(name) for name in reversed(names)]
    assert warm == cold[::-1]
    assert "ab" in warm[1].words and "12" in warm[1].words
    assert warm[1].attributes == {"colour": "black", "size": "m8"}
