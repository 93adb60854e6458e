"""Admission control: how many more messages an instance may fetch right now.

A message is *in flight* from the moment it is recorded until a worker has finished it
(``RECEIVED`` or ``PROCESSING``). Each instance bounds the in-flight messages of the
mailboxes it holds, in all and per mailbox. At the bound a listener keeps its lease and
its connection but fetches nothing until the backlog drains; what it did not fetch stays
on the server, above the checkpoint, and nothing is dropped.

The database count is the truth; grants handed out but not yet recorded are added to it
here, so listener threads fetching side by side cannot overshoot together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from django.db.models import Count

from .models import IN_FLIGHT, InboundMessage


def in_flight_counts(mailbox_ids: Iterable[int]) -> dict[int, int]:
    return dict(
        InboundMessage.objects.filter(mailbox_id__in=list(mailbox_ids), status__in=IN_FLIGHT)
        .values("mailbox_id")
        .annotate(n=Count("id"))
        .values_list("mailbox_id", "n")
    )


class Admission:
    def __init__(
        self,
        *,
        instance_limit: int,
        mailbox_limit: int,
        held: Callable[[], Iterable[int]],
        counts: Callable[[Iterable[int]], dict[int, int]] = in_flight_counts,
    ) -> None:
        self.instance_limit = instance_limit
        self.mailbox_limit = mailbox_limit
        self.held = held  # the mailbox ids this instance listens to now
        self.counts = counts
        self._lock = threading.Lock()
        self._granted: dict[int, int] = {}  # mailbox -> granted, not yet recorded

    def grant(self, mailbox_id: int, wanted: int) -> int:
        """Up to ``wanted`` messages this mailbox may fetch now (0 = wait); every grant
        is followed by ``settle`` once its messages are recorded (or not)."""
        if wanted <= 0:
            return 0
        with self._lock:
            mailboxes = set(self.held()) | {mailbox_id}
            counts = self.counts(mailboxes)
            instance_used = sum(counts.values()) + sum(self._granted.values())
            mailbox_used = counts.get(mailbox_id, 0) + self._granted.get(mailbox_id, 0)
            n = min(
                wanted,
                self.instance_limit - instance_used,
                self.mailbox_limit - mailbox_used,
            )
            if n <= 0:
                return 0
            self._granted[mailbox_id] = self._granted.get(mailbox_id, 0) + n
            return n

    def settle(self, mailbox_id: int, granted: int) -> None:
        with self._lock:
            left = self._granted.get(mailbox_id, 0) - granted
            if left > 0:
                self._granted[mailbox_id] = left
            else:
                self._granted.pop(mailbox_id, None)


def unlimited() -> Admission:
    """For callers that run a listener without a supervisor (tests, one-off runs)."""
    big = 1 << 62
    return Admission(instance_limit=big, mailbox_limit=big, held=lambda: (), counts=lambda _ids: {})
