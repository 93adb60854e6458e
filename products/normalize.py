"""Normalisation of Russian price-list text for matching: pure functions, no database.

What a supplier writes differently from us and still means the same thing is brought to
one form here: ё/е, case, Latin and Cyrillic look-alike letters (``М8х40`` typed with a
Cyrillic М and х), separators and leading zeros in articles, abbreviations
(``оцинк.``, ``нерж.``, ``д/``), sizes written ``М8х40`` / ``M8x40`` / ``M8*40`` /
``4,2 x 16``, volumes ``0,5 л`` / ``500 мл``, weights, pack counts ``10 шт``, colours.

``name_words`` gives a line's or a product's words in a canonical form (the decisive
attributes among them as tokens of their own, ``size:m8x40``); ``attributes`` the
decisive ones alone, which ``conflicts`` compares: a decisive attribute both sides state
and that differs blocks an automatic link however similar the rest is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

# The look-alike letters of the two alphabets (upper and lower case).
_CYRILLIC = "АВЕКМНОРСТХаеокрсухмнвт"
_LATIN = "ABEKMHOPCTXaeokpcyxmhbt"
TO_LATIN = str.maketrans(_CYRILLIC, _LATIN)
TO_CYRILLIC = str.maketrans(_LATIN, _CYRILLIC)
_LOOKALIKES = frozenset(_CYRILLIC + _LATIN)

_CYRILLIC_LETTER = re.compile(r"[а-я]")
_LATIN_LETTER = re.compile(r"[a-z]")
_NOT_ALNUM = re.compile(r"[^0-9A-Za-zА-Яа-я]+")
_LEADING_ZEROS = re.compile(r"(?<![0-9])0+(?=[0-9])")
# A word's runs of letters and of digits: DIN933 and DIN 933 are the same words.
_RUNS = re.compile(r"[a-zа-я]+|[0-9]+")
# A name is read up to this many characters (a real one is far shorter).
MAX_NAME = 1000
# Words longer than this are cut to it: Russian endings vary with gender and number
# (оцинкованный, оцинкованная, оцинкованные) and carry no meaning for matching.
STEM_LENGTH = 6

# Abbreviations price lists use, by their lowered letters (the dot dropped).
ABBREVIATIONS = {
    "оцинк": "оцинкованный",
    "оц": "оцинкованный",
    "оцин": "оцинкованный",
    "нерж": "нержавеющий",
    "нж": "нержавеющий",
    "уп": "упаковка",
    "упак": "упаковка",
    "кор": "коробка",
    "бел": "белый",
    "черн": "черный",
    "чёрн": "черный",
    "красн": "красный",
    "зел": "зеленый",
    "желт": "желтый",
    "корич": "коричневый",
    "прозр": "прозрачный",
    "мет": "металл",
    "металлич": "металлический",
    "дер": "дерево",
    "сам": "саморез",
    "смр": "саморез",
    "шур": "шуруп",
    "выкл": "выключатель",
    "автомат": "автоматический",
    "авт": "автоматический",
    "эл": "электрический",
    "электр": "электрический",
    "изол": "изоляционный",
    "гол": "головка",
    "шестигр": "шестигранный",
    "потайн": "потайной",
    "пот": "потайной",
    "полукр": "полукруглый",
    "эмал": "эмаль",
    "краск": "краска",
    "ун": "универсальный",
    "унив": "универсальный",
    "проф": "профессиональный",
    "наб": "набор",
    "компл": "комплект",
    "к-т": "комплект",
    "кт": "комплект",
}
# Prefix abbreviations written with a slash: д/дерева, б/ручки, с/р.
SLASHED = {
    "д/": "для ",
    "б/": "без ",
    "п/": "под ",
    "с/р": "саморез",
    "н/р": "нержавеющий",
    "к-т": "комплект",
    "п/кр": "полукруглый",
}
_SLASHED_LONGEST_FIRST = sorted(SLASHED.items(), key=lambda item: -len(item[0]))
STOPWORDS = frozenset({"для", "и", "с", "в", "на", "по", "из", "под", "без", "к", "от", "до"})
# Units that only say how a line is counted: not part of what it is.
UNITS = frozenset(
    {"шт", "штук", "штука", "pcs", "pc", "ед", "компл", "пар", "пара", "мм", "mm", "см", "cm"}
)

COLOURS = {
    "бел": "white",
    "черн": "black",
    "красн": "red",
    "син": "blue",
    "голуб": "lightblue",
    "зелен": "green",
    "желт": "yellow",
    "сер": "grey",
    "коричнев": "brown",
    "оранжев": "orange",
    "фиолетов": "violet",
    "розов": "pink",
    "бежев": "beige",
    "прозрачн": "clear",
    "бесцветн": "clear",
    "серебрист": "silver",
    "золотист": "gold",
}
_COLOUR = re.compile(
    r"(?<![а-я])(" + "|".join(sorted(COLOURS, key=len, reverse=True)) + r")"
    r"(ый|ий|ой|ая|яя|ое|ее|ые|ие|ого|его|\.)?(?![а-я])"
)
_RAL = re.compile(r"\b(?:ral|рал)\s*(\d{4})\b")

_NUMBER = r"\d+(?:[.,]\d+)?"
# A size: an optional thread letter (М/M/m/м), numbers joined by х/x/*/×, e.g. М8х40,
# 4,2 x 16, 3х1.5, 100*50*20; or a thread alone (М8).
_SIZE = re.compile(
    rf"(?<![0-9a-zа-я])([мm])?\s?({_NUMBER}(?:\s?[xх*×]\s?{_NUMBER})+)(?![0-9])"
    rf"|(?<![0-9a-zа-я])[мm]({_NUMBER})(?![0-9.,a-zа-я])"
)
# What every size has (digits on both sides of an x, or a thread М8): looked for first,
# an order of magnitude faster than _SIZE, which half of the names do not need.
_SIZE_HINT = re.compile(r"\d\s?[xх*×]\s?\d|[мm]\d")
_MEASURE = re.compile(
    rf"(?<![0-9a-zа-я])({_NUMBER})\s?"
    r"(мл|ml|л|l|литр[а-я]*|кг|kg|гр|г|g|мм|mm|см|cm|м|m|шт|pcs|вт|w|ква|kva|а|a)\.?"
    r"(?![0-9a-zа-я])"
)
# unit → (attribute, factor to its base unit)
MEASURE_UNITS = {
    "мл": ("volume", Decimal(1)),
    "ml": ("volume", Decimal(1)),
    "л": ("volume", Decimal(1000)),
    "l": ("volume", Decimal(1000)),
    "литр": ("volume", Decimal(1000)),
    "кг": ("weight", Decimal(1000)),
    "kg": ("weight", Decimal(1000)),
    "г": ("weight", Decimal(1)),
    "гр": ("weight", Decimal(1)),
    "g": ("weight", Decimal(1)),
    "мм": ("length", Decimal(1)),
    "mm": ("length", Decimal(1)),
    "см": ("length", Decimal(10)),
    "cm": ("length", Decimal(10)),
    "м": ("length", Decimal(1000)),
    "m": ("length", Decimal(1000)),
    "шт": ("pack", Decimal(1)),
    "pcs": ("pack", Decimal(1)),
    "вт": ("power", Decimal(1)),
    "w": ("power", Decimal(1)),
    "ква": ("power", Decimal(1000)),
    "kva": ("power", Decimal(1000)),
    "а": ("current", Decimal(1)),
    "a": ("current", Decimal(1)),
}
# The decisive attributes, in the order they are shown.
DECISIVE = ("size", "volume", "weight", "length", "pack", "power", "current", "colour")


def fold(text: str) -> str:
    """Lower case, ё as е, spaces collapsed."""
    return " ".join(text.lower().replace("ё", "е").split())


def article_key(article: str) -> str:
    """An article as compared: upper case, ё as Е, Cyrillic look-alikes as Latin,
    separators (spaces, dashes, dots, slashes…) dropped, leading zeros of every number
    dropped: ``ав-0012.3`` → ``AB123``."""
    text = article[:MAX_NAME].upper().replace("Ё", "Е").translate(TO_LATIN)
    # Leading zeros of each number between separators: AB-0012 and AB 12 are AB12.
    # (Once more on the whole: a key is its own key.)
    joined = "".join(_LEADING_ZEROS.sub("", group) for group in _NOT_ALNUM.split(text))
    return _LEADING_ZEROS.sub("", joined)


def brand_key(brand: str) -> str:
    """A brand as compared: like an article, but the letters kept as they are once the
    look-alikes are settled by the word's own alphabet (ЗУБР stays ЗУБР, КRАФТ is
    КРАФТ)."""
    words = [_one_script(w) for w in _NOT_ALNUM.split(fold(brand)) if w]
    return "".join(words).upper()


def number(text: str) -> str:
    """A number as compared: decimal comma as a point, no trailing zeros (``4,50`` →
    ``4.5``, ``08`` → ``8``)."""
    try:
        value = Decimal(text.replace(",", "."))
    except InvalidOperation:
        return text
    return _plain(value)


def _plain(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def _one_script(word: str) -> str:
    """A word written in two alphabets in the one it mostly uses (a word with digits,
    an article or a size, in Latin). ``word`` is letters and digits only (a piece of
    _NOT_ALNUM's split)."""
    if not word.isalpha() or _LOOKALIKES.issuperset(word):
        # A size, an article, or a word every letter of which could be either (НSS-Со,
        # В, Р): the same in Latin on both sides.
        return word.translate(TO_LATIN)
    if word.isascii():
        return word
    latin = len(_LATIN_LETTER.findall(word))
    if latin:
        cyrillic = len(_CYRILLIC_LETTER.findall(word))
        return word.translate(TO_CYRILLIC if cyrillic >= latin else TO_LATIN)
    return word


class Parsed(NamedTuple):
    """A name taken apart: its words (canonical, attributes as ``attr:value`` tokens)
    and its decisive attributes."""

    words: tuple[str, ...]
    attributes: dict[str, str]


def _size(match: re.Match[str]) -> str:
    return _size_of(match.group(1) or "", match.group(2), match.group(3))


@functools.lru_cache(maxsize=10_000)
def _size_of(thread: str, sizes: str | None, alone: str | None) -> str:
    """A size as compared (a list writes the same few thousand sizes again and again)."""
    if sizes is not None:
        parts = re.split(r"\s?[xх*×]\s?", sizes)
        return ("m" if thread else "") + "x".join(number(p) for p in parts)
    return "m" + number(alone or "")


@functools.lru_cache(maxsize=10_000)
def _measure_of(amount: str, unit: str) -> tuple[str, str] | None:
    """A measure's attribute and value in its base unit (``0,5 л`` → volume, 500), None
    when the amount is no number."""
    unit = "литр" if unit.startswith("литр") else unit
    attribute, factor = MEASURE_UNITS[unit]
    try:
        value = Decimal(amount.replace(",", ".")) * factor
    except InvalidOperation:
        return None
    return attribute, _plain(value)


def parse_name(name: str) -> Parsed:
    """Words and decisive attributes of a name (of its first MAX_NAME characters: the
    time taken stays bounded whatever a file holds)."""
    text = fold(name[:MAX_NAME])
    if "/" in text or "к-т" in text:
        for short, full in _SLASHED_LONGEST_FIRST:
            text = text.replace(short, full)
    attributes: dict[str, list[str]] = {}
    # The attributes' words (``size:m8x40``), taken out of the text as they are found:
    # the text left is only ever words.
    words: list[str] = []

    def keep(attribute: str, value: str) -> str:
        attributes.setdefault(attribute, []).append(value)
        words.append(f"{attribute}:{value}")
        return " "

    if "ral" in text or "рал" in text:
        text = _RAL.sub(lambda m: keep("colour", "ral" + m.group(1)), text)
    if _SIZE_HINT.search(text):
        text = _SIZE.sub(lambda m: keep("size", _size(m)), text)

    def measure(match: re.Match[str]) -> str:
        found = _measure_of(match.group(1), match.group(2))
        return match.group(0) if found is None else keep(*found)

    text = _MEASURE.sub(measure, text)
    for found, colours in map(_raw_words, text.split()):
        words.extend(found)
        if colours:
            attributes.setdefault("colour", []).extend(colours)
    return Parsed(
        tuple(words),
        {k: v[0] if len(v) == 1 else ",".join(sorted(set(v))) for k, v in attributes.items()},
    )


@functools.lru_cache(maxsize=100_000)
def _raw_words(raw: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The canonical words of one whitespace-separated piece of a name, and the colours
    among them (cached: a price list repeats its words thousands of times; a piece seen
    first, such as a series code ``ab-1234``, is mostly made of parts seen before)."""
    parts = [_part_words(part) for part in _NOT_ALNUM.split(raw) if part]
    if len(parts) == 1:
        return parts[0]
    return (
        tuple([word for words, _ in parts for word in words]),
        tuple([colour for _, colours in parts for colour in colours]),
    )


@functools.lru_cache(maxsize=100_000)
def _part_words(part: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The canonical words of a run of letters and digits, and the colours among them."""
    words: list[str] = []
    for run in _RUNS.findall(_one_script(part)):
        for word in ABBREVIATIONS.get(run, run).split():
            words.extend(_word(word))
    colours = tuple(w[len("colour:") :] for w in words if w.startswith("colour:"))
    return tuple(words), colours


@functools.lru_cache(maxsize=100_000)
def _word(word: str) -> tuple[str, ...]:
    """One word (a run of letters or of digits) as compared: none for a stop word or a
    unit (cached: a list's words are a few thousand)."""
    colour = _COLOUR.fullmatch(word)
    if colour:
        return (f"colour:{COLOURS[colour.group(1)]}",)
    if word in STOPWORDS or word in UNITS:
        return ()
    if word.isdigit():  # ASCII digits only (_RUNS): leading zeros dropped
        return (str(int(word)),)
    return (_stem(word),)


def _stem(word: str) -> str:
    if len(word) > STEM_LENGTH and _CYRILLIC_LETTER.match(word):
        return word[:STEM_LENGTH]
    return word


def name_words(name: str) -> tuple[str, ...]:
    return parse_name(name).words


def attributes(name: str) -> dict[str, str]:
    """The decisive attributes a name states: ``{"size": "m8x40", "pack": "100"}``."""
    return parse_name(name).attributes


def name_key(words: Iterable[str]) -> str:
    """The words as one string, sorted (the order a supplier writes them in does not
    count): what the trigram index of product names is built on."""
    return " ".join(sorted(set(words)))


def conflicts(line: dict[str, str], product: dict[str, str]) -> list[dict[str, str]]:
    """The decisive attributes both state and that differ, as the review queue shows
    them: ``[{"attribute": "size", "line": "m8x45", "product": "m8x40"}]``."""
    return [
        {"attribute": name, "line": line[name], "product": product[name]}
        for name in DECISIVE
        if name in line and name in product and line[name] != product[name]
    ]


def agreements(line: dict[str, str], product: dict[str, str]) -> list[dict[str, str]]:
    """The decisive attributes both state alike."""
    return [
        {"attribute": name, "line": line[name], "product": product[name]}
        for name in DECISIVE
        if name in line and name in product and line[name] == product[name]
    ]
