"""Publishing events through the transactional outbox."""

from __future__ import annotations

import logging

from django.db import DEFAULT_DB_ALIAS, connections, models

from .exceptions import NotInTransaction
from .models import OutboxEvent

logger = logging.getLogger(__name__)


def publish(
    kind: str, aggregate: models.Model, payload: dict, *, using: str = DEFAULT_DB_ALIAS
) -> OutboxEvent:
    """Records an event in the caller's transaction: it exists exactly when the change
    it announces was committed, and vanishes with a rollback.

    Raises NotInTransaction outside ``transaction.atomic()``: an event written in its own
    transaction could outlive a change that rolls back, or be lost after one that commits.
    """
    if not connections[using].in_atomic_block:
        raise NotInTransaction(
            f"publish({kind!r}) must be called inside the transaction that makes the change"
        )
    event = OutboxEvent.objects.using(using).create(
        kind=kind,
        aggregate_type=aggregate._meta.label_lower,
        aggregate_id=str(aggregate.pk),
        payload=payload,
    )
    logger.debug(
        "event published kind=%s aggregate=%s:%s id=%s",
        kind,
        event.aggregate_type,
        event.aggregate_id,
        event.id,
        extra={"action": "event_published", "event_id": str(event.id)},
    )
    return event
