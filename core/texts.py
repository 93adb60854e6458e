"""Stored texts said in the reader's language.

Every reason, row error and delivery error is stored in one form, a msgid and its values
(``core.storedtext.Text``, kept as ``as_json()``); ``translated`` says it in the active
language: the msgid through the catalogue, a value that is itself a text translated in
its sentence, a number in the locale's format, a count choosing the plural form of the
templates registered as plural. A foreign text (a server's reply) is shown as it is.

A text column is written with ``stored``: the English beside the stored form, for logs,
the API and search (never read back to be translated).

This module is the one engine; it imports no app, and apps register their plural
templates and the describers of library exceptions they store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.utils import formats
from django.utils.translation import gettext

from .storedtext import FOREIGN, Text, as_json, foreign, gettext_noop, text_of

__all__ = [
    "FOREIGN",
    "Text",
    "as_json",
    "error_text",
    "foreign",
    "gettext_noop",
    "register",
    "register_error",
    "shown",
    "store",
    "stored",
    "stored_all",
    "text_of",
    "translated",
    "translated_all",
]

# A template's translation for a count (an ngettext call with the template as its msgid,
# so that makemessages finds both forms where it is written).
Plural = Callable[[int], str]

_plurals: dict[str, tuple[str, Plural]] = {}
_describers: list[tuple[tuple[type[BaseException], ...], Callable[[BaseException], Text]]] = []


def register(*, plurals: Mapping[str, tuple[str, Plural]]) -> None:
    """Makes a text of a template in ``plurals`` shown in the plural form for its count:
    the template maps to the name of the value that counts and the function giving the
    translated template for that count."""
    _plurals.update(plurals)


def _shown(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _translated_json(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return formats.number_format(value, force_grouping=True)
    return value


def _translated_json(value: Mapping[str, Any]) -> str:
    template = value.get("text")
    if not isinstance(template, str):
        return ""
    stored_params = value.get("params")
    if not isinstance(stored_params, Mapping):
        stored_params = {}
    params = {name: _shown(param) for name, param in stored_params.items()}
    if template == FOREIGN:
        return str(params.get("text", ""))
    plural = _plurals.get(template)
    count = stored_params.get(plural[0]) if plural else None
    translation = plural[1](count) if plural and isinstance(count, int) else gettext(template)
    try:
        return translation % params if params else translation
    except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder
        return Text.from_json(value)


def translated(value: Text | Mapping[str, Any] | str | None) -> str:
    """``value`` in the active language: a Text or its stored form (``as_json``). A
    plain string is a foreign text, given as it is; None and {} give ""."""
    if isinstance(value, Text):
        return _translated_json(value.as_json())
    if isinstance(value, Mapping):
        return _translated_json(value)
    return value or ""


def translated_all(texts: Iterable[Text | Mapping[str, Any] | str]) -> list[str]:
    return [translated(text) for text in texts]


def stored(field: str, value: object, *, limit: int = 5000) -> dict[str, Any]:
    """The columns that store ``value`` in ``field``: the English (at most ``limit``
    characters) in ``field`` and the stored form in ``field_text``. "" clears both."""
    text = foreign(value) if value else None
    return {
        field: str(text)[:limit] if text is not None else "",
        f"{field}_text": text.as_json() if text is not None else {},
    }


def shown(obj: object, field: str) -> str:
    """A text column of a model instance in the reader's language: its stored form
    translated (the English column as it is, should a writer have left the form empty)."""
    return translated(getattr(obj, f"{field}_text")) or getattr(obj, field)


def store(obj: object, field: str, value: object, *, limit: int = 5000) -> None:
    """Sets ``stored(field, value)`` on a model instance."""
    for name, column in stored(field, value, limit=limit).items():
        setattr(obj, name, column)


def stored_all(values: Iterable[object]) -> list[dict[str, Any]]:
    """A list of texts (warnings, reasons) as a JSON field keeps them."""
    return [as_json(value) for value in values]


def register_error(
    types: type[BaseException] | tuple[type[BaseException], ...],
    describe: Callable[[BaseException], Text],
) -> None:
    """Makes ``error_text`` say an exception of ``types`` with ``describe`` (a library's
    exception classes, say smtplib's)."""
    _describers.append((types if isinstance(types, tuple) else (types,), describe))


ERROR = "%(type)s: %(error)s"


def error_text(error: BaseException) -> Text:
    """The text a failed attempt stores for ``error``: what a registered describer says
    of it (the most recently registered first), the Text it was raised with, else
    ``Type: message`` (the message translated when it is a Text)."""
    for types, describe in reversed(_describers):
        if isinstance(error, types):
            return describe(error)
    return Text(ERROR, type=type(error).__name__, error=text_of(error))
