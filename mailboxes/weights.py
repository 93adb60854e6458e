"""A mailbox's balancing weight, and whether it is listened to at all, in SQL.

A mailbox weighs its ``weight`` field when set. Otherwise it weighs what the app that
reads its mail says: pricefeed counts the mailbox's enabled price-list configs, and
registers that expression here at startup (``set_default_weight``), so this app need not
know its models. With nothing registered a mailbox weighs 1.

A mailbox is listened to when it is enabled and the app that reads its mail has a use
for it (``set_wanted``): pricefeed wants a mailbox once it has an enabled config. Until
then nothing is fetched, so a mailbox saved before its configs does not record its
backlog as matching nothing; its first connection (and its backfill) comes with its
first enabled config.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import F, IntegerField, Q, Value
from django.db.models.functions import Coalesce

# mailbox path ("" or "mailbox") -> an expression giving the default weight of that mailbox
DefaultWeight = Callable[[str], Any]

_default: DefaultWeight | None = None
# mailbox path -> a condition on that mailbox: whether the app that reads it wants it
Wanted = Callable[[str], Any]

_wanted: Wanted | None = None


def set_default_weight(expression: DefaultWeight) -> None:
    global _default
    _default = expression


def weight_expression(mailbox: str = "") -> Coalesce:
    """The weight of a mailbox, reached through ``mailbox`` (a path from the queried
    model, "" for Mailbox itself): its ``weight`` if set, else the registered default."""
    prefix = f"{mailbox}__" if mailbox else ""
    default = _default(mailbox) if _default is not None else Value(1)
    return Coalesce(F(f"{prefix}weight"), default, Value(0), output_field=IntegerField())


def set_wanted(condition: Wanted) -> None:
    global _wanted
    _wanted = condition


def listened_to(mailbox: str = "") -> Q:
    """Whether a mailbox (reached through ``mailbox``, as for ``weight_expression``) is
    to be listened to: enabled, and wanted by the app that reads its mail."""
    prefix = f"{mailbox}__" if mailbox else ""
    condition = Q(**{f"{prefix}enabled": True})
    return condition & Q(_wanted(mailbox)) if _wanted is not None else condition
