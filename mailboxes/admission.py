"""Admission control: how many more messages an instance may fetch right now.

A message is *in flight* from the moment it is recorded until a worker has finished it
(``RECEIVED`` or ``PROCESSING``). Each instance bounds the in-flight messages of the
mailboxes it holds: their number, in all and per mailbox, and their stored size in all.
At a bound a listener keeps its lease and its connection but fetches nothing until the
backlog drains; what it did not fetch stays on the server, above the checkpoint, and
nothing is dropped.

The counts bound how far one mailbox's messages can queue ahead of the others'; the
size bounds what waits in the database. The database's figures are the truth; grants
handed out but not yet recorded are added to the counts here, so listener threads
fetching side by side cannot overshoot together. A listener asks with the sizes the
server gave (RFC822.SIZE) of the messages it would fetch, and is let in as many as fit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from django.db.models import Count, Sum

from .models import IN_FLIGHT, InboundMessage


class InFlight(NamedTuple):
    messages: int
    size: int  # bytes, as the server gave them (RFC822.SIZE)


def in_flight(mailbox_ids: Iterable[int]) -> dict[int, InFlight]:
    rows = (
        InboundMessage.objects.filter(mailbox_id__in=list(mailbox_ids), status__in=IN_FLIGHT)
        .values("mailbox_id")
        .annotate(n=Count("id"), size=Sum("size"))
        .values_list("mailbox_id", "n", "size")
    )
    return {mailbox_id: InFlight(n, size or 0) for mailbox_id, n, size in rows}


NONE = InFlight(0, 0)


class Grant(NamedTuple):
    """What one fetch may take in: the first ``messages`` of those asked about, ``size``
    bytes in all."""

    messages: int
    size: int


class Admission:
    def __init__(
        self,
        *,
        instance_limit: int,
        mailbox_limit: int,
        size_limit: int,
        held: Callable[[], Iterable[int]],
        counts: Callable[[Iterable[int]], dict[int, InFlight]] = in_flight,
    ) -> None:
        self.instance_limit = instance_limit
        self.mailbox_limit = mailbox_limit
        self.size_limit = size_limit
        self.held = held  # the mailbox ids this instance listens to now
        self.counts = counts
        self._lock = threading.Lock()
        self._granted: dict[int, InFlight] = {}  # mailbox -> granted, not yet recorded

    def grant(self, mailbox_id: int, sizes: Sequence[int]) -> Grant:
        """How many of the messages of ``sizes`` (in fetch order; 0 for one that will
        not be stored) this mailbox may fetch now, from the first (none = wait). One
        message is always let in when nothing is in flight, whatever its size. Every
        grant is followed by ``settle`` once its messages are recorded (or not)."""
        if not sizes:
            return Grant(0, 0)
        with self._lock:
            counts = self.counts(set(self.held()) | {mailbox_id})
            granted = self._granted.values()
            instance = sum(c.messages for c in counts.values()) + sum(g.messages for g in granted)
            stored = sum(c.size for c in counts.values()) + sum(g.size for g in granted)
            mine = counts.get(mailbox_id, NONE).messages
            mine += self._granted.get(mailbox_id, NONE).messages
            room = min(len(sizes), self.instance_limit - instance, self.mailbox_limit - mine)
            n, size = 0, 0
            while n < room and (stored + size + sizes[n] <= self.size_limit or not stored + size):
                size += sizes[n]
                n += 1
            if n:
                held = self._granted.get(mailbox_id, NONE)
                self._granted[mailbox_id] = InFlight(held.messages + n, held.size + size)
            return Grant(n, size)

    def settle(self, mailbox_id: int, grant: Grant) -> None:
        with self._lock:
            held = self._granted.pop(mailbox_id, NONE)
            left = InFlight(held.messages - grant.messages, held.size - grant.size)
            if left.messages > 0:
                self._granted[mailbox_id] = left


def unlimited() -> Admission:
    """For callers that run a listener without a supervisor (tests, one-off runs)."""
    big = 1 << 62
    return Admission(
        instance_limit=big,
        mailbox_limit=big,
        size_limit=big,
        held=lambda: (),
        counts=lambda _ids: {},
    )
