"""core.capped: a function run in a child process under a memory cap and a CPU budget;
how the child ended is the parent's to say, and the parent goes on."""

from __future__ import annotations

import pickle

import pytest

from core.budget import CpuBudgetExceeded
from core.capped import ChildFailed, run_capped

TARGETS = "tests.core.capped_targets"
CAPS = {"memory": 512 * 2**20, "cpu_seconds": 5, "timeout": 30}


def test_the_result_comes_back():
    assert run_capped(f"{TARGETS}:add", 2, 3, **CAPS) == 5


def test_an_allocation_past_the_cap_is_a_memory_error_in_the_parent():
    with pytest.raises(MemoryError):
        run_capped(f"{TARGETS}:allocate", 600 * 2**20, **CAPS)


def test_cpu_past_the_budget_stops_the_child():
    with pytest.raises(CpuBudgetExceeded):
        run_capped(f"{TARGETS}:spin", **{**CAPS, "cpu_seconds": 0.5})


def test_a_native_abort_is_reported_as_such():
    with pytest.raises(ChildFailed) as exc:
        run_capped(f"{TARGETS}:abort", **CAPS)
    assert exc.value.how == "aborted"


def test_a_child_past_its_wall_clock_time_is_killed():
    with pytest.raises(ChildFailed) as exc:
        run_capped(f"{TARGETS}:spin", **{**CAPS, "cpu_seconds": 0, "timeout": 1})
    assert exc.value.how == "timeout"


def test_the_childs_own_exception_is_raised_only_when_its_class_is_allowed():
    with pytest.raises(ValueError, match="bad file"):
        run_capped(f"{TARGETS}:refuse", "bad file", **CAPS, allowed=["builtins:ValueError"])
    with pytest.raises(pickle.UnpicklingError, match=r"builtins\.ValueError: not allowed"):
        run_capped(f"{TARGETS}:refuse", "bad file", **CAPS)
