"""The row errors the library reports, as templates in English.

The library imports no Django, so it cannot translate: it formats these templates with
``%`` and named arguments, and marks them with ``gettext_noop`` (the name makemessages
looks for) so that they are in pricefeed's catalogue. pricefeed.texts translates a row
error where it is shown, by recognising its template (the stored text stays English).
"""

from __future__ import annotations


def gettext_noop(message: str) -> str:
    """Marks ``message`` for translation and returns it unchanged."""
    return message


PRICE_MISSING = gettext_noop("price is missing")
SKU_MISSING = gettext_noop("sku is missing")
SKU_NUL = gettext_noop("sku contains a NUL character")
NAME_NUL = gettext_noop("name contains a NUL character")
CURRENCY_NUL = gettext_noop("currency contains a NUL character")
SKU_TOO_LONG = gettext_noop("sku is longer than %(limit)s characters (%(length)s)")
CURRENCY_TOO_LONG = gettext_noop("currency %(value)s is longer than %(limit)s characters")
PRICE_NOT_A_NUMBER = gettext_noop("price %(value)s is not a number")
PRICE_OUT_OF_RANGE = gettext_noop(
    "price %(value)s is out of range (at most %(digits)s digits before the decimal point)"
)
LINE_TOO_LONG = gettext_noop(
    "line %(line)s is %(size)s bytes long, more than %(limit)s (%(setting)s): not read"
)
LINE_NOT_UTF8 = gettext_noop("line %(line)s is not valid UTF-8")
ABOVE_THE_DATA = gettext_noop("%(problem)s (above the data)")

# Every template a row error (or a warning about an unread row) is made from.
ROW_ERRORS = (
    PRICE_MISSING,
    SKU_MISSING,
    SKU_NUL,
    NAME_NUL,
    CURRENCY_NUL,
    SKU_TOO_LONG,
    CURRENCY_TOO_LONG,
    PRICE_NOT_A_NUMBER,
    PRICE_OUT_OF_RANGE,
    LINE_TOO_LONG,
    LINE_NOT_UTF8,
    ABOVE_THE_DATA,
)
