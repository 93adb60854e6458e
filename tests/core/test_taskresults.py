"""core.taskresults: django-q2's successful results pruned by a sweep, not by its monitor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from django_q.models import Failure, Success, Task

from core import sweeps
from core.taskresults import successes_prune

pytestmark = pytest.mark.django_db


def _result(name: str, stopped_at, *, success: bool = True) -> None:
    Task.objects.create(
        id=name,
        name=name,
        func="math.sqrt",
        started=stopped_at,
        stopped=stopped_at,
        success=success,
    )


def test_the_monitor_leaves_pruning_to_the_sweep():
    # django-q2's own pruning locks every result kept after each task (~40 tasks/s).
    assert settings.Q_CLUSTER["save_limit"] == 0
    assert settings.PRICEFEED_Q_SAVE_LIMIT > 0
    assert sweeps.registered()["task results"] is successes_prune


def test_the_sweep_keeps_the_newest_successes_and_every_failure():
    now = timezone.now()
    for i in range(5):
        _result(f"ok-{i}", now - timedelta(minutes=i))
    _result("ok-tie", now - timedelta(minutes=2))  # the same moment as ok-2
    _result("failed", now - timedelta(hours=1), success=False)

    assert successes_prune(keep=3) == 3
    assert successes_prune(keep=3) == 0
    assert set(Success.objects.values_list("name", flat=True)) == {"ok-0", "ok-1", "ok-tie"}
    assert Failure.objects.count() == 1


def test_a_limit_of_zero_keeps_them_all():
    _result("ok", timezone.now())
    assert successes_prune(keep=0) == 0
    assert Success.objects.count() == 1
