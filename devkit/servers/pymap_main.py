"""Runs pymap with every task it starts kept alive until it ends.

pymap reads each new connection through proxyprotocol, which starts the connection's
task with ``asyncio.create_task`` and keeps no reference to it. The event loop holds
tasks weakly, so the garbage collector may destroy a connection while it waits for its
client: on CPython 3.13.0 a second client connecting made the first one's SELECT end in
EOF ("Task was destroyed but it is pending!" in pymap's log). Run as a script by
devkit.servers.pymap.PymapServer, with pymap's own command-line arguments.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

_running: set[asyncio.Task[Any]] = set()
_create_task = asyncio.create_task


def _create_task_kept(coro: Coroutine[Any, Any, Any], **kwargs: Any) -> asyncio.Task[Any]:
    task = _create_task(coro, **kwargs)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task


if __name__ == "__main__":
    asyncio.create_task = _create_task_kept  # type: ignore[assignment]
    from pymap.main import main

    sys.argv[0] = "pymap"
    sys.exit(main())
