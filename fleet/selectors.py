from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q, QuerySet

from core.dbtime import db_now_minus

from .models import ProcessHeartbeat


def live_processes() -> QuerySet[ProcessHeartbeat]:
    """Processes that did not say they stopped, with a heartbeat within the liveness window
    (PRICEFEED_LIVENESS_WINDOW)."""
    return ProcessHeartbeat.objects.filter(process_is_live())


def process_is_live() -> Q:
    return Q(stopped=False, last_seen__gte=db_now_minus(settings.PRICEFEED_LIVENESS_WINDOW))


@dataclass(frozen=True)
class ProcessView:
    process_id: str
    kind: str
    broker: str
    live: bool


def processes_overview() -> list[ProcessView]:
    """Every process with a heartbeat row: live ones first, then by kind and id."""
    live = set(live_processes().values_list("pk", flat=True))
    rows = ProcessHeartbeat.objects.order_by("kind", "process_id")
    views = [ProcessView(r.process_id, r.kind, r.broker, r.pk in live) for r in rows]
    return sorted(views, key=lambda v: not v.live)


def live_brokers() -> dict[str, list[str]]:
    """Each broker the live processes use, with the processes (``kind process_id``)."""
    found: dict[str, list[str]] = {}
    for row in live_processes().order_by("kind", "process_id"):
        found.setdefault(row.broker, []).append(str(row))
    return found
