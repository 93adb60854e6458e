"""django-q2 entry points: load by id, call one service."""

from __future__ import annotations

from core.workers import worker_id

from . import intake
from .imports import lifecycle


def process_message(message_id: int) -> str | None:
    return intake.message_process(message_id=message_id, worker=worker_id())


def run_import(import_id: int) -> str | None:
    return lifecycle.price_import_run(import_id=import_id, worker=worker_id())
