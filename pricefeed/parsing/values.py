"""The values of a line beyond its SKU and price: stock written as text, barcodes, pack
sizes, and the category path of group heading rows."""

from __future__ import annotations

import re
from decimal import Decimal

from .numbers import LIMIT, NumberReader

# --- stock ----------------------------------------------------------------------------

# What a stock cell says besides a plain figure (PriceItem.stock_kind): "" a plain
# figure (or nothing), AT_LEAST a lower bound (">50", "более 50", "10-20"), YES in stock
# with no figure ("есть", "много", "+"), NO none ("нет", "-", "0").
AT_LEAST = "at_least"
YES = "yes"
NO = "no"
STOCK_KINDS = (AT_LEAST, YES, NO)

_YES_WORDS = frozenset(
    {"есть", "да", "в наличии", "наличие", "много", "достаточно", "имеется", "+", "++",
     "+++", "v", "yes", "in stock", "available", "many", "plenty", "y"}
)  # fmt: skip
_NO_WORDS = frozenset(
    {"нет", "нету", "отсутствует", "нет в наличии", "под заказ", "ожидается", "-", "--",
     "—", "no", "n", "out of stock", "none", "на заказ", "0"}
)  # fmt: skip
# ">50", ">=50", "≥50", "более 50", "БОЛЕЕ50", "больше 50", "свыше 50", "от 50", "50+",
# "over 50", "more than 50".
_LOWER_BOUND = re.compile(
    r"(?:>=?|≥|более|больше|свыше|от|over|more than|min\.?)\s*(\d[\d\s.,]*)"
    r"(?:\s*(?:шт|pcs|ед)\.?)?|(\d[\d\s.,]*)\s*\+",
    re.IGNORECASE,
)
# "10-20", "10–20", "от 10 до 20": the lower end is a lower bound.
_RANGE = re.compile(r"(?:от\s*)?(\d[\d\s.,]*?)\s*(?:-|–|—|до|to)\s*\d[\d\s.,]*", re.IGNORECASE)
_LESS = re.compile(r"(?:<|менее|меньше|до|less than|under)\s*\d[\d\s.,]*", re.IGNORECASE)


def read_stock(text: str, num: NumberReader) -> tuple[Decimal | None, str]:
    """A stock cell's text as (figure, kind): ("50", "") a plain figure, (50, AT_LEAST)
    for ">50", (None, YES) for "есть", (0, NO) for "нет", (None, "") for text that says
    nothing readable. "<10" is in stock with no figure (YES)."""
    t = " ".join(text.split()).strip()
    if not t:
        return None, ""
    value = num.quantity(t)
    if value is not None:
        return value, ""
    low = t.casefold().replace("ё", "е").rstrip(".")
    if low in _YES_WORDS:
        return None, YES
    if low in _NO_WORDS:
        return Decimal(0), NO
    m = _LOWER_BOUND.fullmatch(low) or _RANGE.fullmatch(low)
    if m:
        figure = num.quantity((m.group(1) or m.group(2) or "").strip())
        if figure is not None and -LIMIT < figure < LIMIT:
            return figure, AT_LEAST
    if _LESS.fullmatch(low):
        return None, YES
    return None, ""


# --- barcodes ---------------------------------------------------------------------------

_BARCODE_SPLIT = re.compile(r"[,;/|\s]+")
BARCODE_LENGTHS = (8, 12, 13, 14)


def checksum_ok(digits: str) -> bool:
    """Whether the GS1 check digit (the last) of an EAN-8, UPC-A (12), EAN-13 or GTIN-14
    (ASCII digits) is right: the digits before it weighted 3, 1, 3, ... from the right."""
    # Summed as the bytes' codes, the '0's taken off after: no int() per digit.
    codes = digits.encode("ascii")
    odd, even = codes[-2::-2], codes[-3::-2]
    total = 3 * (sum(odd) - 48 * len(odd)) + sum(even) - 48 * len(even)
    return (10 - total % 10) % 10 == codes[-1] - 48


# Per length, per position, a digit's byte -> its weighted value mod 10 (the check
# digit itself weighted 1): the tables of checksums_ok.
_WEIGHTED = {
    length: [
        bytes.maketrans(
            b"0123456789",
            bytes((d * (3 if (length - 1 - position) % 2 else 1)) % 10 for d in range(10)),
        )
        for position in range(length)
    ]
    for length in BARCODE_LENGTHS
}
# A code's total of weighted digits (at most 14 * 9) -> 0 when the check digit is right.
_TOTAL_WRONG = bytes(0 if total % 10 == 0 else 1 for total in range(256))


def checksums_ok(codes: list[str], length: int) -> bool:
    """Whether every one of ``codes`` (each ``length`` ASCII digits, ``length`` one of
    BARCODE_LENGTHS) has a right check digit: checksum_ok of each, at once.

    A load checks a million barcodes; one at a time that is a second of Python. Here
    the codes are laid end to end as bytes; each position's digits (every ``length``-th
    byte) become their weighted values mod 10, read as one big integer, and the
    integers of all positions are added: byte i of the sum is code i's weighted total
    (never above 14 * 9, so no byte carries into the next)."""
    if not codes:
        return True
    joined = "".join(codes).encode("ascii")
    total = 0
    for position, table in enumerate(_WEIGHTED[length]):
        total += int.from_bytes(joined[position::length].translate(table))
    sums = total.to_bytes(len(codes))
    return not any(sums.translate(_TOTAL_WRONG))


def barcode_valid(code: str) -> bool:
    """An EAN-8, UPC-A, EAN-13 or GTIN-14: 8, 12, 13 or 14 ASCII digits, check digit right."""
    return code.isascii() and code.isdigit() and len(code) in BARCODE_LENGTHS and checksum_ok(code)


def normalise_barcode(digits: str) -> str:
    """A valid barcode as it is stored: EAN-8 and EAN-13 as they are; a UPC-A with a
    leading zero (its EAN-13); a GTIN-14 whose indicator digit is 0 as its EAN-13
    (the same item), other GTIN-14 as they are."""
    if len(digits) == 12:
        return "0" + digits
    if len(digits) == 14 and digits[0] == "0":
        return digits[1:]
    return digits


def read_barcodes(text: str, limit: int = 20) -> tuple[list[str], list[str]]:
    """(valid, invalid) barcodes of a cell: split on , ; / | and spaces; a part is
    valid when it is 8, 12, 13 or 14 digits with a right check digit (normalised:
    normalise_barcode); any other part is invalid, kept as written (cut to 32
    characters). At most ``limit`` parts are read; duplicates are kept once."""
    valid: list[str] = []
    invalid: list[str] = []
    for part in _BARCODE_SPLIT.split(text.strip())[:limit]:
        if not part:
            continue
        if part.isascii() and part.isdigit() and len(part) in BARCODE_LENGTHS:
            if checksum_ok(part):
                code = normalise_barcode(part)
                if code not in valid:
                    valid.append(code)
                continue
        shown = part[:32]
        if shown not in invalid:
            invalid.append(shown)
    return valid, invalid


# --- category headings ----------------------------------------------------------------

# "1.", "1.1.", "2.3.4" then the title ("1.1. Болты"): the outline's depth is the count
# of its numbers.
_OUTLINE_TITLE = re.compile(r"((?:\d{1,3}\.)+\d{0,3}|\d{1,3}\))\.?\s*(.*)", re.DOTALL)
CATEGORY_SEPARATOR = " / "
CATEGORY_MAX_LENGTH = 500
TITLE_MAX_LENGTH = 200


class CategoryPath:
    """The category path group heading rows build: a numbered heading ("1. Крепёж",
    "1.1. Болты") nests by its outline depth ("Крепёж / Болты"); an unnumbered one
    starts a path of its own (the file says nothing of its depth)."""

    def __init__(self) -> None:
        self.levels: list[tuple[int, str]] = []
        self.text = ""

    def heading(self, cells: list[str]) -> None:
        """A heading row's non-empty cells (an outline number may stand alone in the
        first)."""
        # A merged title repeated: once. PostgreSQL text holds no NUL.
        text = " ".join(dict.fromkeys(cells)).replace("\x00", "")
        m = _OUTLINE_TITLE.fullmatch(text)
        if m and m.group(2).strip():
            depth = m.group(1).rstrip(".").count(".") + 1
            title = m.group(2).strip()
        else:
            depth = 0
            title = text.strip()
        title = " ".join(title.split())[:TITLE_MAX_LENGTH]
        if depth == 0:
            self.levels = [(0, title)]
        else:
            self.levels = [(d, t) for d, t in self.levels if 0 < d < depth]
            self.levels.append((depth, title))
        self.text = CATEGORY_SEPARATOR.join(t for _, t in self.levels)[:CATEGORY_MAX_LENGTH]
