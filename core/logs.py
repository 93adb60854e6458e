"""Log formats: one line per record, with its context keys, that no input can forge.

Call sites pass context as ``extra`` with stable keys, one per identity: ``action``,
``mailbox_id``, ``mailbox_name``, ``message_id`` (an InboundMessage's id), ``import_id``,
``event_id``, ``object_id``, ``instance_id``. ``LOG_FORMAT=text`` (the default) appends
them to the line as ``key=value``; ``LOG_FORMAT=json`` (python-json-logger) writes one
JSON object per record with them as fields.

Messages and values often carry text from e-mail and files (subjects, sender addresses,
file names, cell values). In the text format every control character, and the Unicode
line and paragraph separators, are escaped (``\\n``, ``\\x1b``, ``\\u2028``), so no
value can start a line of its own or rewrite the terminal; JSON escapes them by itself.
A traceback is the one multi-line part, and it comes from the code, not the input.
"""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

# Attributes every LogRecord has: whatever else a record carries came from ``extra``.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}

_ESCAPES = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, 0x85)},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def escape(text: str) -> str:
    """``text`` with control characters and line separators written as escapes."""
    return text.translate(_ESCAPES)


def context(record: logging.LogRecord) -> dict[str, object]:
    """The ``extra`` keys of a record, in the order they were given."""
    return {
        k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")
    }


class TextFormatter(logging.Formatter):
    """``<time> <level> <logger> [<thread>] <message> key=value ...``, escaped."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = message = escape(record.message)
        line = super().formatMessage(record)
        pairs = (f"{key}={escape(str(value))}" for key, value in context(record).items())
        # A key the message already states (mailbox_id=3 ...) is not said twice.
        extras = " ".join(pair for pair in pairs if pair not in message)
        return f"{line} {extras}" if extras else line


class JsonFormatter(_JsonFormatter):
    """One JSON object per record: time, level, logger, thread, message, the ``extra``
    keys, and the traceback as ``exc_info`` text."""

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(threadName)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            json_ensure_ascii=False,
        )


def first_line(exc: BaseException) -> str:
    """The first line of an exception's text, or its class name: for one-line logs."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class ContextLogger(logging.LoggerAdapter):
    """A logger that adds fixed context keys (``mailbox_id``, ``mailbox_name`` ...) to
    every record, merged with the call's own ``extra``."""

    def process(self, msg: object, kwargs: Any) -> tuple[object, Any]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs
