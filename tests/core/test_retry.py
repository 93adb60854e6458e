"""core.retry.Backoff: exponential backoff with jitter, capped."""

from __future__ import annotations

import pytest

from core import retry
from core.retry import Backoff


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 5, 8])
def test_backoff_delay_stays_between_half_the_ceiling_and_the_ceiling(attempt):
    backoff = Backoff(base=2.0, maximum=1000.0)
    ceiling = 2.0 * 2 ** (attempt - 1)

    delays = [backoff.delay(attempt) for _ in range(200)]

    assert all(ceiling / 2 <= d <= ceiling for d in delays)


def test_backoff_delay_spans_the_jitter_range(monkeypatch):
    backoff = Backoff(base=10.0, maximum=1000.0)

    monkeypatch.setattr(retry.random, "uniform", lambda low, high: low)
    assert backoff.delay(3) == 20.0
    monkeypatch.setattr(retry.random, "uniform", lambda low, high: high)
    assert backoff.delay(3) == 40.0


# 1025 consecutive failures is what a listener reaches after ~85 hours of a server being
# down at the default 300 s maximum; the delay must still be the capped one.
@pytest.mark.parametrize("attempt", [10, 50, 1024, 1025, 5000])
def test_backoff_delay_is_capped_at_the_maximum(attempt):
    backoff = Backoff(base=1.0, maximum=300.0)

    delays = [backoff.delay(attempt) for _ in range(100)]

    assert all(150.0 <= d <= 300.0 for d in delays)


@pytest.mark.parametrize("attempt", [0, -3])
def test_backoff_delay_before_the_first_attempt_uses_the_base(attempt):
    assert 0.5 <= Backoff(base=1.0, maximum=10.0).delay(attempt) <= 1.0
