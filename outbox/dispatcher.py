"""The dispatch loop: claim due events in batches, hand each batch to django-q2, sleep
until there is more (PostgreSQL LISTEN/NOTIFY, or a short poll elsewhere)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections

from core.faults import crash_point
from core.pgnotify import NotifyListener

from . import services

logger = logging.getLogger(__name__)

DELIVER_TASK = "outbox.tasks.deliver"


@dataclass
class Dispatcher:
    dispatcher_id: str
    stop: threading.Event

    def run(self) -> None:
        from django_q.tasks import async_task

        batch = settings.PRICEFEED_OUTBOX_BATCH
        poll = settings.PRICEFEED_OUTBOX_POLL_INTERVAL
        next_sweep = 0.0
        listener = NotifyListener(services.CHANNEL)
        logger.info("dispatch_outbox started dispatcher=%s", self.dispatcher_id)
        try:
            while not self.stop.is_set():
                try:
                    if time.monotonic() >= next_sweep:
                        next_sweep = time.monotonic() + settings.PRICEFEED_SWEEP_INTERVAL
                        services.events_expire_claims()
                    claim = services.new_claim_id(self.dispatcher_id)
                    ids = services.events_claim(dispatcher=claim, limit=batch)
                    if ids:
                        crash_point("outbox_after_claim")
                        async_task(
                            DELIVER_TASK,
                            [str(i) for i in ids],
                            claim,
                            task_name=f"deliver {len(ids)} event(s)",
                        )
                        if len(ids) == batch:
                            continue  # more are probably waiting: no sleep
                except Exception:
                    logger.exception("dispatch step failed dispatcher=%s", self.dispatcher_id)
                    close_old_connections()
                    self.stop.wait(poll)
                    continue
                listener.wait(poll, self.stop)
        finally:
            listener.close()
            logger.info("dispatch_outbox stopped dispatcher=%s", self.dispatcher_id)
