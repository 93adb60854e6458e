"""django-q2 entry points: load by id, call one service."""

from __future__ import annotations

from . import services


def deliver(event_ids: list[str], dispatcher: str) -> dict[str, int]:
    # The ids go to the database as they came (text cast to uuid there): turning 500
    # strings into UUID objects first only cost the worker time.
    return services.events_deliver(event_ids=event_ids, dispatcher=dispatcher)
