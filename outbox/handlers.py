"""Who handles which kind of event. A handler takes a batch (one kind) and returns, per
event id, None for done or the exception that stopped it; raising fails the whole batch.
A kind is registered with its label, the name the admin gives it in the reader's
language (the kind itself is an identifier the code and the logs use).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from .models import OutboxEvent

Handler = Callable[[list[OutboxEvent]], dict[uuid.UUID, BaseException | None]]

_handlers: dict[str, Handler] = {}
_labels: dict[str, str | Promise] = {}

NOOP = "outbox.noop"


def handler(kind: str, *, label: str | Promise) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        _handlers[kind] = fn
        _labels[kind] = label
        return fn

    return register


def handler_for(kind: str) -> Handler | None:
    return _handlers.get(kind)


def kind_label(kind: str) -> str:
    """The kind's name in the active language (the kind itself when none is known)."""
    label = _labels.get(kind)
    return str(label) if label is not None else kind


@handler(NOOP, label=_("no-op (a check of the dispatch path)"))
def noop(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Does nothing: for health checks and for measuring the dispatch path itself."""
    return {event.id: None for event in events}
