"""Properties of products.normalize: keys are stable (a key of a key is the key), blind
to case, ё, separators, look-alike letters and word order, and never fail on any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from products.normalize import (
    TO_CYRILLIC,
    TO_LATIN,
    article_key,
    attributes,
    brand_key,
    name_key,
    name_words,
    parse_name,
)

ARTICLE_CHARS = st.sampled_from(list("0123456789ABCEHKMOPTXАВЕКМНОРСТХ-./ _"))
ARTICLES = st.lists(ARTICLE_CHARS, max_size=20).map("".join)
NAME_WORDS = st.sampled_from(
    ["Болт", "гайка", "М8х40", "M10*50", "4,2x16", "0,5 л", "500 мл", "(100 шт)", "оцинк.",
     "белая", "DIN", "933", "ПФ-115", "ёлка", "д/мет.", "уп.10шт", "16А", "10Вт", "RAL 9016"]
)  # fmt: skip


@given(st.text(max_size=200))
def test_any_text_is_taken_apart_without_an_error(text):
    parsed = parse_name(text)
    assert all(word for word in parsed.words)
    assert set(parsed.attributes) <= {"size", "volume", "weight", "length", "pack", "power",
                                      "current", "colour"}  # fmt: skip
    article_key(text)
    brand_key(text)


@given(ARTICLES)
def test_an_article_key_is_its_own_key(article):
    assert article_key(article_key(article)) == article_key(article)


@given(ARTICLES)
def test_article_keys_are_blind_to_case_alphabet_and_separators(article):
    key = article_key(article)
    assert article_key(article.lower()) == key
    assert article_key(article.translate(TO_LATIN)) == key
    assert article_key(article.translate(TO_CYRILLIC)) == key
    assert article_key(article.replace("-", " ").replace(".", "/")) == key


@given(st.lists(NAME_WORDS, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_word_order_changes_neither_the_name_key_nor_the_attributes(words, rng):
    shuffled = list(words)
    rng.shuffle(shuffled)
    one, other = " ".join(words), " ".join(shuffled)
    assert name_key(name_words(one)) == name_key(name_words(other))
    assert attributes(one) == attributes(other)


@given(st.lists(NAME_WORDS, min_size=1, max_size=8))
def test_case_and_ё_change_nothing(words):
    name = " ".join(words)
    assert parse_name(name.upper()) == parse_name(name)
    assert parse_name(name.replace("е", "ё")) == parse_name(name)
