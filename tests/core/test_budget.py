"""core.budget: CPU-time budgets for work on untrusted bytes."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from core.budget import CpuBudgetExceeded, cpu_budget


class Refused(Exception):
    pass


def spin(seconds: float) -> int:
    """Burns CPU for up to ``seconds`` of wall time; returns the loops done."""
    loops = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        loops += 1
    return loops


def test_work_over_its_budget_is_stopped_with_the_given_error():
    with pytest.raises(Refused), cpu_budget(0.05, Refused):
        spin(30)  # would take 30 s: stopped after about 0.05 s of CPU


def test_the_default_error_is_cpu_budget_exceeded():
    with pytest.raises(CpuBudgetExceeded), cpu_budget(0.05):
        spin(30)


def test_work_within_its_budget_runs_to_the_end_and_leaves_no_timer_behind():
    previous = signal.getsignal(signal.SIGPROF)

    with cpu_budget(30):
        assert spin(0.05) > 0

    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGPROF) is previous


def test_outside_the_main_thread_the_budget_is_not_enforced():
    outcome = []

    def work():
        with cpu_budget(0.01, Refused):
            outcome.append(spin(0.2))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()

    assert outcome and outcome[0] > 0
