"""Caps on a catalogue file, and the one error every reader raises for a file it will
not read."""

from __future__ import annotations

from dataclasses import dataclass, fields

from django.conf import settings

SETTING_PREFIX = "PRICEFEED_PRODUCTS_"


class CatalogueRefused(Exception):
    """The catalogue file cannot be read (its reason, translated, is the message)."""


@dataclass(frozen=True)
class LoadLimits:
    """``max_file_bytes``  the file (1M products of the template are ~120 MB of CSV);
    ``max_rows``        products (lines, offers, Товар elements) in one file;
    ``max_elements``    XML elements in one file (a CommerceML product is ~20-40);
    ``max_depth``       XML nesting (CommerceML's groups nest; 64 is far past any real
                        classifier, and stops a file that is only nesting);
    ``max_value_chars`` one XML text or attribute value (a description can be long; a
                        value of megabytes is an attack, not a product);
    ``max_seconds``     wall-clock time for reading the file (checked as it goes).

    Each can be set in settings as ``PRICEFEED_PRODUCTS_<FIELD>``."""

    max_file_bytes: int = 1 << 30
    max_rows: int = 5_000_000
    max_elements: int = 200_000_000
    max_depth: int = 64
    max_value_chars: int = 1 << 20
    max_seconds: int = 900


def load_limits(**overrides: int) -> LoadLimits:
    """The limits from settings (read at call time), then ``overrides``."""
    defaults = LoadLimits()
    values = {
        f.name: getattr(settings, SETTING_PREFIX + f.name.upper(), getattr(defaults, f.name))
        for f in fields(LoadLimits)
    }
    return LoadLimits(**(values | overrides))
