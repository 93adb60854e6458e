"""django-q2 entry points: load by id, call one service."""

from __future__ import annotations

import os
import socket

from . import services


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def process_message(message_id: int) -> str | None:
    return services.message_process(message_id=message_id, worker=worker_id())
