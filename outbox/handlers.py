"""Who handles which kind of event. A handler takes a batch (one kind) and returns, per
event id, None for done or the exception that stopped it; raising fails the whole batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from .models import OutboxEvent

Handler = Callable[[list[OutboxEvent]], dict[uuid.UUID, BaseException | None]]

_handlers: dict[str, Handler] = {}

NOOP = "outbox.noop"


def handler(kind: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        _handlers[kind] = fn
        return fn

    return register


def handler_for(kind: str) -> Handler | None:
    return _handlers.get(kind)


@handler(NOOP)
def noop(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Does nothing: for health checks and for measuring the dispatch path itself."""
    return {event.id: None for event in events}
