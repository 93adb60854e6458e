"""Periodic sweeps that apps register and a long-running process runs.

A sweep hands forgotten work back to its queue: expired claims, rows due again, tasks
lost with a dead worker. Each app registers its own at startup (``AppConfig.ready``), so
the process that runs them (``listen_mail``'s supervisor) needs to know none of them.
Every sweep is safe to run from every instance at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

Sweep = Callable[[], object]

_sweeps: dict[str, Sweep] = {}


def register(name: str, sweep: Sweep) -> None:
    """Adds (or replaces) the sweep called ``name``."""
    _sweeps[name] = sweep


def registered() -> dict[str, Sweep]:
    return dict(_sweeps)


def run_all() -> None:
    """Runs every registered sweep, in registration order; the first error propagates
    (the caller's loop logs it and tries again at its next round)."""
    for sweep in list(_sweeps.values()):
        sweep()
