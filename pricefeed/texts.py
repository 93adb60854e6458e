"""Texts pricefeed stores in English, shown translated where an operator reads them.

Row errors (made by the parsing library, which imports no Django), a config's match
reasons, an import's reasons and a message's intake reasons are data: they are stored as
English texts made from templates marked with gettext_noop, which this module registers
with the one engine, core.texts (imported by PricefeedConfig.ready). ``translated``
recognises the template a text was made from and gives its translation with the same
values; a text made from no known template (an older wording, a library's exception) is
shown as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.utils.translation import ngettext

from core import texts as core_texts
from core.texts import translated, translated_all

from . import intake, matching
from .imports import lifecycle, source
from .limits import FILE_TOO_LARGE
from .parsing import messages as parsing_messages
from .parsing.types import CELLS_CUT

__all__ = ["translated", "translated_all"]


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


def _templates() -> Iterable[str]:
    yield from parsing_messages.ROW_ERRORS
    yield from matching.REASONS
    yield from lifecycle.REASONS
    yield from source.REASONS
    yield FILE_TOO_LARGE
    yield from intake.REASONS
    yield from _PLURALS
    yield from parsing_messages.FILE_ERRORS


core_texts.register(_templates, plurals=_PLURALS, verbatim=parsing_messages.VERBATIM)
