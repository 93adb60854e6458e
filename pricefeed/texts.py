"""Texts pricefeed stores in English, translated where an operator reads them.

Row errors (made by the parsing library, which imports no Django), a config's match
reasons and an import's reasons are data: they are stored as English texts made from
templates marked with gettext_noop. translated() recognises the template a text was made
from and gives the template's translation with the same values; a text made from no
known template (an older wording, a library's exception) is shown as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache

from django.utils import formats
from django.utils.translation import gettext, ngettext

from . import intake, matching
from .imports import lifecycle, source
from .limits import FILE_TOO_LARGE
from .parsing import messages as parsing_messages
from .parsing.types import CELLS_CUT

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


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
# A value longer than this is not looked at as a text of its own (a list of file names).
_NESTED_MAX = 500


def _templates() -> Iterable[str]:
    yield from parsing_messages.ROW_ERRORS
    yield from matching.REASONS
    yield from lifecycle.REASONS
    yield from source.REASONS
    yield FILE_TOO_LARGE
    yield intake.NO_ENABLED_CONFIGS
    yield from _PLURALS


def _count(value: str) -> int:
    return int(value.replace(",", "")) if _GROUPED.fullmatch(value) else 0


def _regex(template: str) -> re.Pattern[str]:
    parts = []
    position = 0
    for found in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position : found.start()]))
        parts.append(f"(?P<{found[1]}>.*?)" if found[1] else "%")
        position = found.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts), re.DOTALL)


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((template, _regex(template)) for template in dict.fromkeys(_templates()))


def _value(value: str) -> str:
    """A value inside a text: a known text translated, a number in the locale's format."""
    if _GROUPED.fullmatch(value):
        return formats.number_format(_count(value), force_grouping=True)
    return translated(value) if len(value) <= _NESTED_MAX else value


def translated(text: str) -> str:
    """``text`` in the active language when it was made from a known template."""
    for template, pattern in _patterns():
        found = pattern.fullmatch(text)
        if found is None:
            continue
        values = {name: _value(value) for name, value in found.groupdict().items()}
        if template in _PLURALS:
            name, plural = _PLURALS[template]
            return plural(_count(found[name])) % values
        return gettext(template) % values
    return text


def translated_all(texts: Iterable[str]) -> list[str]:
    return [translated(text) for text in texts]
