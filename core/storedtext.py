"""The one form a stored reason, row error or delivery error takes: a msgid and its values.

A worker that writes a reason does not know who reads it, nor in which language. It
writes a ``Text``: the msgid (an English template marked with ``gettext_noop`` where it
is written, so that makemessages finds it) and the values that fill it. The database
keeps ``as_json()``; core.texts says it again in the reader's language when shown. A
``Text`` is also a ``str``, the English, which logs, exceptions and the API read.

A value is kept as what it is: an ``int`` is a number (shown in the reader's format), a
``Text`` is a sentence of its own (translated too), anything else is text taken as it is
(a cell, a file name, a server's reply), cut to ``CUT`` characters and made storable (no
NUL, no lone surrogate): a value from a hostile file or server never makes a stored text
long, nor one PostgreSQL refuses.

Imports nothing, so the parsing library (which imports no Django) writes Texts too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# A foreign value is cut to this many characters when a Text is made.
CUT = 200
# A text of no msgid of ours (a library's exception, a server's reply), kept as it is.
FOREIGN = "%(text)s"


def cut(value: str, limit: int = CUT) -> str:
    """``value``, at most ``limit`` characters: a longer one ends in "…"."""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _storable(value: str) -> str:
    """``value`` as PostgreSQL stores it in text and JSON: no NUL, no lone surrogate (what
    undecodable bytes become)."""
    value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _kept(value: object) -> int | str:
    if isinstance(value, Text):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, BaseException):
        return text_of(value)
    return _storable(cut(value if isinstance(value, str) else str(value)))


def _english(value: int | str) -> int | str:
    return f"{value:,}" if isinstance(value, int) else value


class Text(str):
    """The English (``template % params``, numbers grouped with commas) as a ``str`` that
    remembers its msgid and values; a value may itself be a Text."""

    template: str
    params: dict[str, int | str]

    def __new__(cls, template: str, /, **params: object) -> Text:
        kept = {name: _kept(value) for name, value in params.items()}
        english = (
            template % {name: _english(value) for name, value in kept.items()} if kept else template
        )
        text = super().__new__(cls, english)
        text.template = str(template)
        text.params = kept
        return text

    def __reduce__(self):  # pickled (a task's exception, say) with its msgid and values
        return (_rebuilt, (self.template, self.params))

    def as_json(self) -> dict[str, Any]:
        """The stored form: ``{"text": msgid, "params": {...}}``, a Text value nested."""
        stored: dict[str, Any] = {"text": self.template}
        if self.params:
            stored["params"] = {
                name: value.as_json() if isinstance(value, Text) else value
                for name, value in self.params.items()
            }
        return stored

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> Text:
        """The Text ``as_json`` gave (a stored value that is not one gives an empty Text)."""
        template = stored.get("text") if isinstance(stored, Mapping) else None
        if not isinstance(template, str):
            return cls("")
        params = stored.get("params") or {}
        values = {
            name: cls.from_json(value) if isinstance(value, Mapping) else value
            for name, value in (params.items() if isinstance(params, Mapping) else ())
        }
        try:
            return cls(template, **values)
        except (KeyError, TypeError, ValueError):  # a template that lost a placeholder
            return cls(FOREIGN, text=template)


def gettext_noop(message: str) -> Text:
    """Marks ``message`` as a msgid (makemessages looks for this name) and gives it as a
    Text of no values, so that a msgid stored as it is keeps its form."""
    return Text(message)


def _rebuilt(template: str, params: dict[str, Any]) -> Text:
    return Text(template, **params)


def foreign(value: object) -> Text:
    """A text of no msgid of ours (a library's message, a server's reply) as a Text:
    shown as it is, cut to ``CUT`` characters."""
    return value if isinstance(value, Text) else Text(FOREIGN, text=value)


def text_of(exc: BaseException) -> Text:
    """The exception's message: the Text it was raised with, else its ``str`` as a
    foreign text."""
    if len(exc.args) == 1 and isinstance(exc.args[0], Text):
        return exc.args[0]
    return foreign(str(exc))


def as_json(value: object) -> dict[str, Any]:
    """The stored form of ``value``: a Text's, a plain string's as a foreign text, and {}
    for "" or None."""
    if not value:
        return {}
    return foreign(value).as_json()
