"""Crash points for fault-injection tests.

``PRICEFEED_CRASH_AT=<name>[,<name>...]`` makes the process SIGKILL itself when it
reaches a named point, so a test can stop a real process at an exact step. Unset (the
default) the check is one dictionary lookup.
"""

from __future__ import annotations

import logging
import os
import signal

logger = logging.getLogger(__name__)


def crash_point(name: str) -> None:
    wanted = os.environ.get("PRICEFEED_CRASH_AT")
    if wanted and name in wanted.split(","):
        # PRICEFEED_CRASH_ONCE=<path>: only the first process to get here dies (the file
        # records it), so a retried step can succeed.
        marker = os.environ.get("PRICEFEED_CRASH_ONCE")
        if marker:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
        logger.warning("crash point reached point=%s: killing own process", name)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
