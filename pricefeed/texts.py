"""pricefeed's plural texts, registered with core.texts (imported by PricefeedConfig.ready).

Row errors (made by the parsing library, which imports no Django), a config's match
reasons, an import's reasons and a message's intake reasons are stored as Texts (a msgid
and its values) and said in the reader's language by ``translated``; a msgid whose
translation depends on a count is registered here with the value that counts.
"""

from __future__ import annotations

from collections.abc import Callable

from django.utils.translation import ngettext

from core import texts as core_texts
from core.texts import shown, text_of, translated, translated_all

from . import matching
from .imports import lifecycle
from .parsing.types import CELLS_CUT

__all__ = ["shown", "text_of", "translated", "translated_all"]


def _matched_files(count: int) -> str:
    return ngettext("matched %(count)s file(s)", "matched %(count)s file(s)", count)


def _no_valid_rows(count: int) -> str:
    return ngettext(
        "no valid price rows (%(failed)s row(s) failed)",
        "no valid price rows (%(failed)s row(s) failed)",
        count,
    )


def _cells_cut(count: int) -> str:
    return ngettext(
        "%(rows)s row(s) have cells past column %(width)s (%(setting)s); those cells were "
        "not read (first: row %(first)s)",
        "%(rows)s row(s) have cells past column %(width)s (%(setting)s); those cells were "
        "not read (first: row %(first)s)",
        count,
    )


# Templates whose translation depends on a count: the stored template, the value that
# counts, and the translated template for that count. (The English forms are the stored
# template's: "file(s)" both.)
_PLURALS: dict[str, tuple[str, Callable[[int], str]]] = {
    matching.MATCHED_FILES: ("count", _matched_files),
    lifecycle.NO_VALID_ROWS_FAILED: ("failed", _no_valid_rows),
    CELLS_CUT: ("rows", _cells_cut),
}


core_texts.register(plurals=_PLURALS)
