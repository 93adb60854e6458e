"""django-q2 entry points: load by id, call one service."""

from __future__ import annotations

from mailboxes.tasks import worker_id

from . import services


def run_import(import_id: int) -> str | None:
    return services.price_import_run(import_id=import_id, worker=worker_id())
