"""Why a price-list config or file cannot be used. (Why a file cannot be read as a price
list is the parsing library's own: pricefeed.parsing.errors.)"""

from __future__ import annotations


class PricefeedError(Exception):
    """A price-list config or import cannot be used as it is."""


class PatternError(PricefeedError, ValueError):
    """The pattern is not a valid glob or regular expression."""
