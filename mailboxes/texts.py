"""Sentences for operators that are logged and stored in English and shown translated.

A connection test's result is written by a worker, which knows nothing of who reads it
and in which language: the English goes into the text column and the logs, the msgid
and its parameters beside it (``as_json``), and the admin says it in the reader's
language (``translated``).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext


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


def translated(value: Text | dict[str, Any] | str) -> str:
    """``value`` in the active language (a Text or its ``as_json``); a plain string, or a
    msgid the catalogue lacks, as it is."""
    if isinstance(value, Text):
        value = value.as_json()
    if not isinstance(value, dict):
        return str(value)
    if "text" not in value:
        return ""
    params = {
        name: translated(param) if isinstance(param, dict) else param
        for name, param in (value.get("params") or {}).items()
    }
    try:
        return gettext(value["text"]) % params if params else gettext(value["text"])
    except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder
        return value["text"] % params if params else value["text"]
