"""A mailbox's balancing weight, in SQL.

A mailbox weighs its ``weight`` field when set. Otherwise it weighs what the app that
reads its mail says: pricefeed counts the mailbox's enabled price-list configs, and
registers that expression here at startup (``set_default_weight``), so this app need not
know its models. With nothing registered a mailbox weighs 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import F, IntegerField, Value
from django.db.models.functions import Coalesce

# mailbox path ("" or "mailbox") -> an expression giving the default weight of that mailbox
DefaultWeight = Callable[[str], Any]

_default: DefaultWeight | None = None


def set_default_weight(expression: DefaultWeight) -> None:
    global _default
    _default = expression


def weight_expression(mailbox: str = "") -> Coalesce:
    """The weight of a mailbox, reached through ``mailbox`` (a path from the queried
    model, "" for Mailbox itself): its ``weight`` if set, else the registered default."""
    prefix = f"{mailbox}__" if mailbox else ""
    default = _default(mailbox) if _default is not None else Value(1)
    return Coalesce(F(f"{prefix}weight"), default, Value(0), output_field=IntegerField())
