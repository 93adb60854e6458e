"""Work split into parts that run side by side, each a transaction on a database
connection of its own (products.linking's matching, pricing.offers' refresh): the work
is PostgreSQL's or waits on it, and one session uses one of the server's cores.

The work is divided by fixed buckets (a hash of a key into ``buckets`` values, a power
of 2 every instance shares); part k of n has the buckets b with b % n = k. The caller
locks its buckets in ascending order, as every part does, so parts never deadlock.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.db import connection, transaction

T = TypeVar("T")


def shares(buckets: int, parts: int) -> list[list[int]]:
    """The buckets of each of ``parts`` parts: part k has the buckets b with
    b % parts = k."""
    return [[b for b in range(buckets) if b % parts == k] for k in range(parts)]


def side_by_side(work: Callable[[list[int]], T], buckets: int, parts: int, name: str) -> list[T]:
    """``work(share)`` for each part's share of ``buckets``, in threads named ``name``,
    each in a transaction on its own connection (closed after), in part order. A part
    that fails raises here once the others have ended; those others stay committed."""

    def part(share: list[int]) -> T:
        try:
            with transaction.atomic():
                return work(share)
        finally:
            connection.close()

    with ThreadPoolExecutor(parts, thread_name_prefix=name) as pool:
        return list(pool.map(part, shares(buckets, parts)))
