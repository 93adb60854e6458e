"""Crash points for fault-injection tests.

``PRICEFEED_CRASH_AT=<name>[,<name>...]`` makes the process SIGKILL itself when it
reaches a named point, so a test can stop a real process at an exact step;
``PRICEFEED_PAUSE_AT`` makes it SIGSTOP itself there instead (a frozen "zombie" that a
test later resumes with SIGCONT), and ``PRICEFEED_SLOW_AT`` makes the thread sleep
there for ``PRICEFEED_SLOW_SECONDS`` (work caught in flight). Unset (the default) the
check is three dictionary lookups.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

logger = logging.getLogger(__name__)


def crash_point(name: str) -> None:
    slow = os.environ.get("PRICEFEED_SLOW_AT")
    if slow and name in slow.split(","):
        seconds = float(os.environ.get("PRICEFEED_SLOW_SECONDS", "30"))
        logger.warning("slow point reached point=%s: sleeping %.0fs", name, seconds)
        time.sleep(seconds)
    for action, sig in (("CRASH", signal.SIGKILL), ("PAUSE", signal.SIGSTOP)):
        wanted = os.environ.get(f"PRICEFEED_{action}_AT")
        if not wanted or name not in wanted.split(","):
            continue
        # PRICEFEED_<action>_ONCE=<path>: only the first process to get here stops (the
        # file records it), so a retried step can succeed.
        marker = os.environ.get(f"PRICEFEED_{action}_ONCE")
        if marker:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
        logger.warning("%s point reached point=%s pid=%s", action.lower(), name, os.getpid())
        for handler in logging.getLogger().handlers:
            handler.flush()
        # To this thread, not the process: a process-directed SIGSTOP is taken by some
        # other thread (the main one, waiting in poll), and the whole group stops only
        # once that thread runs, while this one goes on past the point, often into the
        # write it was to stop before. Sent to this thread, it stops on the return from
        # the system call; every other thread of the process stops with it.
        signal.pthread_kill(threading.get_ident(), sig)
