"""django-q2 entry points: load by id, call one service."""

from __future__ import annotations

import uuid

from . import services


def deliver(event_ids: list[str], dispatcher: str) -> dict[str, int]:
    return services.events_deliver(
        event_ids=[uuid.UUID(i) for i in event_ids], dispatcher=dispatcher
    )
