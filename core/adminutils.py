"""Small helpers for the apps' admin classes."""

from __future__ import annotations

from typing import Any


def annotated(obj: object, name: str) -> Any:
    """A value that ``get_queryset()`` annotated a row with: the model does not declare
    it, so type checkers cannot see it."""
    return getattr(obj, name)
