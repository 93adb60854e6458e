"""django-q2 entry points: load by id, call one service."""

from __future__ import annotations

from . import services


def deliver_batch(batch: list[str], dispatcher: str) -> dict[str, int]:
    """A batch as dispatch_outbox claims it (services.events_claim_batch)."""
    return services.events_deliver_batch(batch=batch, dispatcher=dispatcher)


def deliver(event_ids: list[str], dispatcher: str) -> dict[str, int]:
    """A batch by event ids: tasks queued by a dispatcher of an earlier release."""
    # The ids go to the database as they came (text cast to uuid there): turning 500
    # strings into UUID objects first only cost the worker time.
    return services.events_deliver(event_ids=event_ids, dispatcher=dispatcher)
