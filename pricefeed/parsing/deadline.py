"""The time budget of one parse() call (Limits.max_seconds)."""

from __future__ import annotations

import time

from core.storedtext import Text

from . import messages as m
from .errors import ParseTimeLimit
from .types import Limits, limit_name

# Looked up at every call, so that a test can move the clock.
_now = time.monotonic


class Deadline:
    """The moment a parse must be over. ``check`` is a clock read and a comparison:
    callers call it every few thousand rows or once per header candidate, never per
    cell."""

    def __init__(self, limits: Limits) -> None:
        self.seconds = limits.max_seconds
        self.at = _now() + self.seconds

    def check(self, where: str) -> None:
        """Raise ParseTimeLimit, saying ``where`` the parse stopped, once it is late."""
        if _now() > self.at:
            raise ParseTimeLimit(
                Text(
                    m.TIME_LIMIT,
                    seconds=self.seconds,
                    setting=limit_name("max_seconds"),
                    where=where,
                )
            )
