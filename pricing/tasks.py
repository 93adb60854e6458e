"""django-q2 entry points of pricing."""

from __future__ import annotations

from datetime import date

from .services import rates_fetch


def rates_fetch_task(day: str) -> str:
    """Fetches the bank's rates for ``day`` (ISO); the outcome is on its RateFetch row."""
    fetch, _ = rates_fetch(date.fromisoformat(day))
    return fetch.status
