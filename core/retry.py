"""Retry and backoff policies as small value objects built from settings."""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: attempt n waits up to base * 2**(n-1), capped."""

    base: float
    maximum: float

    def delay(self, attempt: int) -> float:
        """Returns the delay before retry number ``attempt`` (1-based)."""
        exponent = min(max(attempt - 1, 0), 62)  # a float overflows long before 2**1024
        ceiling = min(self.maximum, self.base * (2**exponent))
        # Half fixed, half random: never hammers, and spreads a herd of reconnects.
        return ceiling / 2 + random.uniform(0, ceiling / 2)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int
    backoff: Backoff

    def exhausted(self, attempts: int) -> bool:
        return attempts >= self.max_attempts


def imap_reconnect_backoff() -> Backoff:
    return Backoff(settings.PRICEFEED_IMAP_BACKOFF_BASE, settings.PRICEFEED_IMAP_BACKOFF_MAX)


def processing_retry_policy() -> RetryPolicy:
    return RetryPolicy(
        max_attempts=settings.PRICEFEED_PROCESSING_MAX_ATTEMPTS,
        backoff=Backoff(
            settings.PRICEFEED_PROCESSING_RETRY_BASE, settings.PRICEFEED_PROCESSING_RETRY_MAX
        ),
    )


def outbox_retry_policy() -> RetryPolicy:
    return RetryPolicy(
        max_attempts=settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS,
        backoff=Backoff(settings.PRICEFEED_OUTBOX_RETRY_BASE, settings.PRICEFEED_OUTBOX_RETRY_MAX),
    )


def crash_limit() -> int:
    """Runs that may end with their worker process (crashes) before a row fails for good."""
    return max(1, settings.PRICEFEED_CRASH_MAX_ATTEMPTS)
