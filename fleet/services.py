"""Process heartbeats: each long-running process says which broker it uses, and one that
would use another broker than the live processes refuses to start."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.functions import Now

from core import brokers
from core.dbtime import db_now_minus
from core.workers import host

from .exceptions import BrokerMismatch
from .models import ProcessHeartbeat
from .selectors import live_processes

logger = logging.getLogger(__name__)

FORGET_AFTER = 24 * 3600.0  # rows of processes gone this long are deleted


def process_register(*, process_id: str, kind: str, pid: int, broker: str | None = None) -> str:
    """Records this process and its broker, unless a live process of another id uses
    another broker: then raises BrokerMismatch naming both brokers and the setting.
    Returns the broker fingerprint recorded."""
    mine = broker or brokers.fingerprint()
    with transaction.atomic():
        ProcessHeartbeat.objects.filter(last_seen__lt=db_now_minus(FORGET_AFTER)).delete()
        others = list(
            live_processes()
            .exclude(process_id=process_id)
            .exclude(broker=mine)
            .order_by("kind", "process_id")
        )
        if others:
            raise BrokerMismatch(mismatch_message(kind=kind, mine=mine, others=others))
        ProcessHeartbeat.objects.update_or_create(
            process_id=process_id,
            defaults={
                "kind": kind,
                "host": host(),
                "pid": pid,
                "broker": mine,
                "stopped": False,
                "started_at": Now(),
                "last_seen": Now(),
            },
        )
    logger.info(
        "process registered process=%s kind=%s broker=%s",
        process_id,
        kind,
        mine,
        extra={"action": "process_registered", "broker": mine},
    )
    return mine


def mismatch_message(*, kind: str, mine: str, others: list[ProcessHeartbeat]) -> str:
    theirs = sorted({other.broker for other in others})
    listed = ", ".join(f"{other.kind} {other.process_id} ({other.broker})" for other in others[:5])
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return (
        f"refusing to start {kind}: its django-q2 broker is {mine}, but the live processes "
        f"use {' and '.join(theirs)}: {listed}{more}. Every process must use the same "
        f"broker: set {brokers.BROKER_SETTING} to the same value on every process "
        "(empty = the database), or stop those processes first."
    )


def process_beat(*, process_id: str, kind: str, pid: int, broker: str) -> None:
    """Keeps the heartbeat fresh; recreates the row when it was deleted."""
    updated = ProcessHeartbeat.objects.filter(process_id=process_id).update(
        last_seen=Now(), stopped=False
    )
    if not updated:
        ProcessHeartbeat.objects.update_or_create(
            process_id=process_id,
            defaults={"kind": kind, "host": host(), "pid": pid, "broker": broker, "stopped": False},
        )


def process_stopped(*, process_id: str) -> None:
    ProcessHeartbeat.objects.filter(process_id=process_id).update(stopped=True, last_seen=Now())
