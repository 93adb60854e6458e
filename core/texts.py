"""Texts the project stores in English, shown in the reader's language.

A worker that writes a reason (a message refused, a mailbox's error, an import's outcome,
an SMTP refusal) does not know who reads it, nor in which language: it stores English,
which logs and scripts read as well, and the admin says it again in the reader's language
with ``translated``. Two kinds of stored text are understood:

- a plain English string made from a template marked with ``gettext_noop``
  (``TEMPLATE % values``). Each app registers its templates (``register``); the template
  a string was made from is recognised by its fixed words, and its translation is given
  with the same values: a value that is itself such a text is translated too, a number is
  shown in the locale's format, a count picks the plural form. A string made from no
  registered template (an older wording, a library's exception, a server's reply) is
  shown as it is.
- a ``Text``: a ``str`` of the English that remembers its msgid and parameters, stored as
  JSON (``as_json``) beside the English where a template would be ambiguous.

This module is the one engine; it imports no app, and apps register what they store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from django.utils import formats
from django.utils.translation import gettext

# A template's translation for a count (an ngettext call with the template as its msgid,
# so that makemessages finds both forms where it is written).
Plural = Callable[[int], str]
Templates = Iterable[str] | Callable[[], Iterable[str]]

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
# A value longer than this is not looked at as a text of its own (a list of file names).
_NESTED_MAX = 500

_sources: list[Templates] = []
_plurals: dict[str, tuple[str, Plural]] = {}
_verbatim: set[str] = set()
_describers: list[tuple[tuple[type[BaseException], ...], Callable[[BaseException], str]]] = []


def register(
    templates: Templates,
    *,
    plurals: Mapping[str, tuple[str, Plural]] | None = None,
    verbatim: Iterable[str] = (),
) -> None:
    """Makes stored texts made from ``templates`` (or from what the callable gives when
    first needed) shown translated.

    ``plurals`` maps a template whose translation depends on a count to the name of the
    value that counts and the function giving the translated template for that count;
    those templates need not be in ``templates``. A value named in ``verbatim`` (a port,
    a UID, a reply code) is shown as stored, never as a number in the locale's format.
    """
    if not any(source is templates for source in _sources):
        _sources.append(templates)
    _plurals.update(plurals or {})
    _verbatim.update(verbatim)
    _patterns.cache_clear()
    _parse.cache_clear()


@dataclass(frozen=True)
class _Pattern:
    template: str
    prefix: str
    suffix: str
    regex: re.Pattern[str]
    literal: int  # how many fixed characters: the more, the surer a match


def _compiled(template: str) -> _Pattern:
    parts = []
    position = 0
    names: list[re.Match[str]] = []
    for found in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position : found.start()]))
        if not found[1]:
            parts.append("%")
        elif any(name[1] == found[1] for name in names):
            parts.append(f"(?P={found[1]})")  # the same value again
        else:
            parts.append(f"(?P<{found[1]}>.*?)")
        if found[1]:
            names.append(found)
        position = found.end()
    parts.append(re.escape(template[position:]))
    if names:
        prefix, suffix = template[: names[0].start()], template[names[-1].end() :]
    else:
        prefix = suffix = template
    return _Pattern(
        template=template,
        prefix=prefix.replace("%%", "%"),
        suffix=suffix.replace("%%", "%"),
        regex=re.compile("".join(parts), re.DOTALL),
        literal=len(_PLACEHOLDER.sub("", template)),
    )


def _templates() -> Iterable[str]:
    for source in _sources:
        yield from source() if callable(source) else source
    yield from _plurals


@cache
def _patterns() -> tuple[_Pattern, ...]:
    # A template of no fixed words ("%(error)s") would read every text: it is never one.
    patterns = [_compiled(template) for template in dict.fromkeys(_templates())]
    patterns = [pattern for pattern in patterns if pattern.literal]
    # A template of more fixed words first: of two readings that account for as much of
    # a text, the one of the surer template is taken.
    return tuple(sorted(patterns, key=lambda pattern: -pattern.literal))


def templates() -> tuple[str, ...]:
    """Every registered template, the plural ones included."""
    return tuple(pattern.template for pattern in _patterns())


def _count(value: str) -> int:
    return int(value.replace(",", "")) if _GROUPED.fullmatch(value) else 0


def _nested(name: str, value: str) -> bool:
    """Whether a value may itself be a text of a template (not a name, a number, a list)."""
    return name not in _verbatim and not _GROUPED.fullmatch(value) and len(value) <= _NESTED_MAX


@lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[int, _Pattern | None, tuple[tuple[str, str], ...]]:
    """How sure a reading of ``text`` is (the fixed characters it accounts for, its
    values' readings included), the template it was made from, and its values.

    Where two templates fit ("%(reason)s; last: %(detail)s" and "the worker process
    %(worker)s died while running it" both fit "… died …; last: the worker process …"),
    the reading that accounts for more of the text is taken."""
    best: tuple[int, _Pattern | None, tuple[tuple[str, str], ...]] = (0, None, ())
    for pattern in _patterns():
        if best[0] >= len(text):  # no reading accounts for more than the whole text
            break
        if not (text.startswith(pattern.prefix) and text.endswith(pattern.suffix)):
            continue
        found = pattern.regex.fullmatch(text)
        if found is None:
            continue
        values = tuple(found.groupdict().items())
        score = pattern.literal + sum(
            _parse(value)[0] for name, value in values if _nested(name, value)
        )
        if score > best[0]:
            best = (score, pattern, values)
    return best


def _value(name: str, value: str) -> str:
    """A value inside a text: a known text translated, a number in the locale's format."""
    if name in _verbatim:
        return value
    if _GROUPED.fullmatch(value):
        return formats.number_format(_count(value), force_grouping=True)
    return _translated_string(value) if len(value) <= _NESTED_MAX else value


def _translated_string(text: str) -> str:
    _score, pattern, found = _parse(text)
    if pattern is None:
        return text
    values = {name: _value(name, value) for name, value in found}
    plural = _plurals.get(pattern.template)
    try:
        if plural is not None:
            name, translation = plural
            return translation(_count(dict(found)[name])) % values
        return gettext(pattern.template) % values
    except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder
        return text


class Text(str):
    """English as a ``str`` (``template % params``) that remembers its msgid and
    parameters. Mark the msgid with ``gettext_noop`` where it is written so that
    makemessages finds it; a parameter may itself be a Text."""

    template: str
    params: dict[str, Any]

    def __new__(cls, template: str, **params: Any) -> Text:
        text = super().__new__(cls, template % params if params else template)
        text.template = template
        text.params = params
        return text

    def __reduce__(self):  # pickled (a task's exception, say) as the plain English
        return (str, (str(self),))

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.template,
            "params": {
                name: value.as_json() if isinstance(value, Text) else value
                for name, value in self.params.items()
            },
        }


def as_json(value: str) -> dict[str, Any]:
    """What ``translated`` needs to say ``value`` again: {} for a plain string."""
    return value.as_json() if isinstance(value, Text) else {}


def text_of(exc: BaseException) -> str:
    """The exception's message, as the Text it was raised with when it was."""
    if len(exc.args) == 1 and isinstance(exc.args[0], Text):
        return exc.args[0]
    return str(exc)


def _translated_json(value: dict[str, Any]) -> str:
    if "text" not in value:
        return ""
    params = {
        name: _translated_json(param) if isinstance(param, dict) else param
        for name, param in (value.get("params") or {}).items()
    }
    try:
        return gettext(value["text"]) % params if params else gettext(value["text"])
    except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder
        return value["text"] % params if params else value["text"]


def translated(value: Text | dict[str, Any] | str | None) -> str:
    """``value`` in the active language: a Text, its ``as_json``, or a stored English
    string made from a registered template. A plain string of no registered template, or
    a msgid the catalogue lacks, is given as it is; None and {} give ""."""
    if isinstance(value, Text):
        return _translated_json(value.as_json())
    if isinstance(value, dict):
        return _translated_json(value)
    if not value:
        return ""
    return _translated_string(str(value))


def register_error(
    types: type[BaseException] | tuple[type[BaseException], ...],
    describe: Callable[[BaseException], str],
) -> None:
    """Makes ``error_text`` say an exception of ``types`` with ``describe``: a sentence
    made from a registered template (a library's exception classes, say smtplib's)."""
    _describers.append((types if isinstance(types, tuple) else (types,), describe))


def error_text(error: BaseException) -> str:
    """The English a failed attempt stores for ``error``: what a registered describer
    says of it (the most recently registered first), else ``Type: message`` as it is."""
    for types, describe in reversed(_describers):
        if isinstance(error, types):
            return describe(error)
    return f"{type(error).__name__}: {error}"


def translated_all(texts: Iterable[str]) -> list[str]:
    return [translated(text) for text in texts]
