"""Prices and quantities as suppliers write them: "1 234,50", "1,234.50", "1234.5 руб.",
"$1,234.50", "€12,50", "12.5", or typed numbers from a workbook."""

from __future__ import annotations

import re
from decimal import Context, Decimal, DecimalException

from .types import NUMBER_DECIMAL_PLACES, NUMBER_MAX_DIGITS

# Spaces that group thousands (space, NBSP, narrow NBSP, thin and figure spaces) and the
# Swiss apostrophe: removed. The Unicode minus becomes "-".
_CLEAN = str.maketrans(
    {" ": None, "\xa0": None, "\u202f": None, "\u2009": None, "\u2007": None,
     "'": None, "’": None, "\u2212": "-"}
)  # fmt: skip
_WITH_UNIT = re.compile(r"([+-]?)(\D*?)([+-]?\d[\d.,]*)(\D*)")
_DIGITS = frozenset("0123456789")
_NUMBER_START = frozenset("0123456789+-.,")

CURRENCY_TOKENS = {
    "₽": "RUB", "руб": "RUB", "р": "RUB", "rub": "RUB", "rur": "RUB", "рублей": "RUB",
    "рубля": "RUB", "рубль": "RUB",
    "$": "USD", "usd": "USD", "us$": "USD", "долл": "USD",
    "€": "EUR", "eur": "EUR", "евро": "EUR",
    "£": "GBP", "gbp": "GBP",
    "¥": "CNY", "cny": "CNY", "rmb": "CNY", "юань": "CNY",
    "₸": "KZT", "kzt": "KZT", "тенге": "KZT",
    "₴": "UAH", "uah": "UAH", "грн": "UAH",
    "byn": "BYN",
}  # fmt: skip
# Prices and quantities are stored as numeric(18,4): PostgreSQL rounds a value to 4
# places, then it must have at most 14 digits before the point. So |value| < LIMIT, the
# smallest value that rounds to 10**14; a value out of that range is a row error (price)
# or no quantity, never a failed COPY. A float below 1e14 is at most
# 99999999999999.984375: FLOAT_LIMIT needs no rounding margin.
WHOLE_DIGITS = NUMBER_MAX_DIGITS - NUMBER_DECIMAL_PLACES
LIMIT = Decimal(10) ** WHOLE_DIGITS - Decimal(5).scaleb(-NUMBER_DECIMAL_PLACES - 1)
FLOAT_LIMIT = float(10**WHOLE_DIGITS)

# Numbers are made in a context that keeps them storable: 28 significant digits (a
# 20000-digit fraction would overflow PostgreSQL's numeric), exponents within +-999 (an
# exponent such as 1e-99999 underflows to 0, one such as 1e99999 raises Overflow, a
# DecimalException). Unlike Decimal(), it also refuses "1_000" (InvalidOperation).
NUMBER_CONTEXT = Context(prec=28, Emin=-999, Emax=999)
make_decimal = NUMBER_CONTEXT.create_decimal

_QUANTITY_UNITS = frozenset({"шт", "pcs", "pc", "ед", "компл", "уп", "упак", "м", "кг", "л"})
_CURRENCY_WORD = re.compile(r"[^\W\d_]+|[₽$€£¥₸₴]")


def currency_code(token: str) -> str | None:
    """RUB/USD/EUR... for a symbol or word ("руб.", "₽", "$", "usd"), else None."""
    return CURRENCY_TOKENS.get(token.strip().strip(".").lower())


def currency_in_text(text: str) -> str | None:
    """A currency named anywhere in free text, such as a header "Цена, руб." or "Price $"."""
    for word in _CURRENCY_WORD.findall(text.lower()):
        code = CURRENCY_TOKENS.get(word)
        if code:
            return code
    return None


def normalise_currency(value: str) -> str:
    """A currency cell as a code when it is a known symbol or word, else as written."""
    value = value.strip()
    if not value:
        return ""
    code = currency_code(value)
    if code:
        return code
    if len(value) == 3 and value.isascii() and value.isalpha():
        return value.upper()
    return value


def float_to_decimal(value: float) -> Decimal:
    """A workbook float as the decimal a person typed: 10.1 stays 10.1 (repr is the
    shortest string that round-trips), 12345.0 becomes 12345. No range check."""
    if value.is_integer() and abs(value) < 1e16:
        return Decimal(int(value))
    return Decimal(repr(value))


class NumberReader:
    """Reads numbers in text with one file's separator convention.

    A number is read by its own shape whenever its shape decides it: "1 234,50",
    "12,5", "1.234.567" and "1.234,50" use ',' as the decimal separator; "12.5",
    "1,234,567" and "1,234.50" use '.'. The one ambiguous shape is a single separator
    followed by exactly three digits after a 1-3 digit, non-zero integer part: "1,234"
    and "1.234". Those follow ``number_format``: "comma" reads ',' as decimal and '.' as
    thousands, "dot" the other way round. In "auto" the file decides: the first
    unambiguous number in it (in any numeric column) sets the convention for the whole
    file, including ambiguous values read before it (the caller re-reads those, see
    ``pending``). A file with no unambiguous number reads the lone separator as a
    decimal point, both ',' and '.': Russian lists write "1,234" for 1.234 and a dot
    thousands separator without a decimal part is rare.
    """

    def __init__(self, number_format: str = "auto") -> None:
        self.decimal = {"comma": ",", "dot": ".", "auto": None}[number_format]
        self.pending = False  # an ambiguous number was read before the file decided

    def read(self, s: str) -> tuple[Decimal, str | None]:
        """(value, currency named in the cell or None) for stripped, non-empty text;
        ValueError when it is not a number."""
        # Once the file's convention is known, a value with no other separator than the
        # decimal one reads as Decimal after dropping spaces; whatever Decimal rejects
        # (grouping, currency, junk) falls through to the full rules, which agree. A
        # digit must follow a leading "-": "-NaN1" would read as a NaN.
        if self.decimal == ",":
            if "." not in s and s[-1] in _DIGITS and signed_digits(s):
                try:
                    t = s.replace(" ", "").replace("\xa0", "").replace(",", ".")
                    return make_decimal(t), None
                except DecimalException:
                    pass
        elif self.decimal == ".":
            if "," not in s and s[-1] in _DIGITS and signed_digits(s):
                try:
                    return make_decimal(s.replace(" ", "").replace("\xa0", "")), None
                except DecimalException:
                    pass
        try:
            return self._read(s)
        except DecimalException:
            # Past the context's exponent (a thousand digits): no price, and a row error
            # rather than a parse that fails whole (found by tests/fuzz/test_stored_texts).
            raise ValueError(s) from None

    def _read(self, s: str) -> tuple[Decimal, str | None]:
        if s.isascii():
            if s.isdigit():
                return make_decimal(s), None
            t = s.replace(" ", "").replace("'", "") if (" " in s or "'" in s) else s
        else:
            t = s.translate(_CLEAN)
        if not t:
            raise ValueError(s)
        if t[-1] in _DIGITS and t[0] in _NUMBER_START:
            # Fast paths for the shapes that fill most files: "1234", "1234.5", "1234,50".
            comma = t.find(",")
            dot = t.find(".")
            try:
                if comma < 0 and dot < 0:
                    return _finite(make_decimal(t), s), None
                if comma < 0 and len(t) - dot != 4 and t.find(".", dot + 1) < 0:
                    value = _finite(make_decimal(t), s)
                    if self.decimal is None:
                        self.decimal = "."
                    return value, None
                if dot < 0 and len(t) - comma != 4 and t.find(",", comma + 1) < 0:
                    value = _finite(make_decimal(t.replace(",", ".")), s)
                    if self.decimal is None:
                        self.decimal = ","
                    return value, None
                return self._separators(t, s), None
            except (DecimalException, ValueError):
                pass  # "-$5", "1 234 руб": a sign or digits around a unit
        return self._with_currency(t, s)

    def _with_currency(self, t: str, s: str) -> tuple[Decimal, str]:
        """A number with a currency before or after it ("$5", "1 234 руб", "-€5"); ``t``
        is ``s`` cleaned. Raises ValueError for anything else."""
        m = _WITH_UNIT.fullmatch(t)
        if m is None:
            raise ValueError(s)
        sign, prefix, t, suffix = m.groups()
        unit = prefix or suffix
        currency = currency_code(unit) if not (prefix and suffix) else None
        if currency is None:
            raise ValueError(s)
        if sign:
            if t[0] in "+-":
                raise ValueError(s)
            t = sign + t
        return self._separators(t, s), currency

    def quantity(self, s: str) -> Decimal | None:
        """A stock figure, or None for text such as "в наличии", ">10", "много" and for
        a figure out of range."""
        try:
            value = self.read(s)[0]
        except ValueError:
            pass
        else:
            return value if -LIMIT < value < LIMIT else None
        # "5 шт.", "10 pcs": a number with a unit.
        m = _WITH_UNIT.fullmatch(s.translate(_CLEAN))
        if m and not m.group(2) and m.group(4).strip(".").lower() in _QUANTITY_UNITS:
            try:
                value = self._separators(m.group(1) + m.group(3), s)
            except ValueError:
                return None
            return value if -LIMIT < value < LIMIT else None
        return None

    def _separators(self, t: str, original: str) -> Decimal:
        comma = t.find(",")
        dot = t.find(".")
        if comma >= 0 or dot >= 0:
            t = self._resolve(t, comma, dot, original)
        try:
            d = make_decimal(t)
        except DecimalException:
            raise ValueError(original) from None
        return _finite(d, original)

    def _resolve(self, t: str, comma: int, dot: int, original: str) -> str:
        if comma >= 0 and dot >= 0:
            # Both: the last one is the decimal separator, the other groups thousands.
            if t.rfind(",") > t.rfind("."):
                decimal, group = ",", "."
            else:
                decimal, group = ".", ","
            if t.count(decimal) != 1:
                raise ValueError(original)
            whole, frac = t.split(decimal)
            _check_groups(whole, group, original)
            self._evidence(decimal)
            return whole.replace(group, "") + "." + frac
        sep = "," if comma >= 0 else "."
        n = t.count(sep)
        if n > 1:  # "1,234,567" / "1.234.567": thousands only
            _check_groups(t, sep, original)
            self._evidence("." if sep == "," else ",")
            return t.replace(sep, "")
        whole, frac = t.split(sep)
        digits = whole.lstrip("+-")
        if len(frac) == 3 and 1 <= len(digits) <= 3 and digits.strip("0"):
            settled = self.decimal
            if settled is None:
                self.pending = True
                settled = sep
            return t.replace(sep, ".") if settled == sep else whole + frac
        self._evidence(sep)
        return t.replace(",", ".")

    def _evidence(self, decimal: str) -> None:
        if self.decimal is None:
            self.decimal = decimal


def signed_digits(s: str) -> bool:
    """Whether non-empty ``s`` starts with a digit, or with "-" and a digit."""
    return s[0] in _DIGITS or (s[0] == "-" and s[1:2] in _DIGITS)


def _finite(value: Decimal, original: str) -> Decimal:
    if not value.is_finite():
        raise ValueError(original)
    return value


def _check_groups(whole: str, group: str, original: str) -> None:
    """ "1,234,567" groups by three after a 1-3 digit head; anything else is not a number."""
    parts = whole.lstrip("+-").split(group)
    if len(parts) == 1:
        return
    if not 1 <= len(parts[0]) <= 3 or any(len(p) != 3 for p in parts[1:]):
        raise ValueError(original)
