"""A CPU-time budget and a memory cap for work on untrusted bytes.

Reading hostile input can be slow in ways no count catches in advance (a quadratic
corner of a parser), so pure parsing runs under a budget of CPU seconds. It counts the
process's own CPU time (ITIMER_PROF: user and system), so a busy machine does not make
a fair file look hostile, and it does not touch the wall-clock alarm django-q2 uses for
its task timeout.

Signal handlers run in the main thread only: elsewhere (a listener thread) the budget is
not enforced, and such code must be bounded by construction instead.
"""

from __future__ import annotations

import resource
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class CpuBudgetExceeded(Exception):
    """The work used more CPU time than its budget."""


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def cpu_budget(seconds: float, error: Callable[[], BaseException] | None = None) -> Iterator[None]:
    """Raises ``error()`` (CpuBudgetExceeded by default) inside the block once it has used
    ``seconds`` of CPU time. Enforced in the main thread only; ``seconds <= 0`` is no
    budget. Budgets do not nest: an inner one replaces the outer one for its duration."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return
    limit = _cpu_seconds() + seconds

    def on_signal(signum: int, frame: object) -> None:
        if _cpu_seconds() >= limit:
            raise (error or CpuBudgetExceeded)()

    previous = signal.signal(signal.SIGPROF, on_signal)
    # Fire at the limit, then every 100 ms in case the first signal arrived a hair early.
    signal.setitimer(signal.ITIMER_PROF, seconds, 0.1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def cap_memory(wanted: int | None) -> int | None:
    """Caps this process's address space (RLIMIT_AS, soft limit) at ``wanted`` bytes, or
    lower when the process already had a lower limit; returns the limit now in force,
    None when none is wanted (0 or less = no cap). Past it an allocation fails: a
    MemoryError in Python, an abort (exit 134) in a native reader."""
    if not wanted or wanted < 0:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = min([wanted, *(value for value in (soft, hard) if value != resource.RLIM_INFINITY)])
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit
