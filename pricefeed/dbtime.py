"""Time from the database, never from this process's clock (leases, claims, backoff)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now


def db_now_plus(seconds: float) -> ExpressionWrapper:
    """``now() + interval`` evaluated by the database."""
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
    )


def db_now_minus(seconds: float) -> ExpressionWrapper:
    return db_now_plus(-seconds)
