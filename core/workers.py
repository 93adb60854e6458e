"""Who is doing the work: the name a worker process writes into the claims it takes."""

from __future__ import annotations

import os
import socket


def worker_id() -> str:
    """``host:pid`` of this process (a django-q2 worker, a listener, a dispatcher)."""
    return f"{socket.gethostname()}:{os.getpid()}"
