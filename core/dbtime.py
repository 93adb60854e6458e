"""Time from the database, never from this process's clock (leases, claims, backoff)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import DateTimeField, ExpressionWrapper, F, Q, Value
from django.db.models.functions import Now


def db_now_plus(seconds: float) -> ExpressionWrapper:
    """``now() + interval`` evaluated by the database."""
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
    )


def db_now_minus(seconds: float) -> ExpressionWrapper:
    return db_now_plus(-seconds)


def due_and_not_queued(requeue_after: float, queued_field: str) -> Q:
    """Due now (no delay, or its delay passed) and not handed to the queue since: either
    never since it became due, or not for ``requeue_after`` seconds (a lost task)."""
    due = Q(next_attempt_at=None) | Q(next_attempt_at__lte=Now())
    not_queued = Q(**{f"{queued_field}__lt": db_now_minus(requeue_after)}) | Q(
        next_attempt_at__isnull=False, **{f"{queued_field}__lt": F("next_attempt_at")}
    )
    return due & not_queued
