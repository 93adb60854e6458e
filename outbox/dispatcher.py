"""The dispatch loop: claim due events in batches, hand each batch to django-q2, sleep
until there is more (PostgreSQL LISTEN/NOTIFY, or a short poll elsewhere).

While a backlog lasts, LANES loops claim side by side, each on its own database
connection: one loop spends most of each batch waiting for the database (its claim, then
its enqueue), and the workers waited for it in turn. The claims stay FOR UPDATE SKIP
LOCKED, as for several dispatchers, so no event is claimed twice.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.backends.signals import connection_created

from core.faults import crash_point
from core.pgnotify import NotifyListener

from . import services, sql

logger = logging.getLogger(__name__)

DELIVER_TASK = "outbox.tasks.deliver_batch"

# Claim loops while full batches keep coming: the first one also sweeps and waits for
# NOTIFY; the others join it on a backlog and rest when it is gone.
LANES = 2


def _commit_without_flush(sender: object, connection: Any, **kwargs: Any) -> None:
    """Every connection the dispatch loops open commits without waiting for the WAL
    flush (outbox/sql.py, COMMIT_WITHOUT_FLUSH)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.COMMIT_WITHOUT_FLUSH)


@dataclass
class Dispatcher:
    dispatcher_id: str
    stop: threading.Event
    backlog: threading.Event = field(default_factory=threading.Event)

    def _step(self, broker, async_task) -> int:
        """Claims one batch and hands it to django-q2; how many events it claimed."""
        claim = services.new_claim_id(self.dispatcher_id)
        batch = services.events_claim_batch(dispatcher=claim, limit=settings.PRICEFEED_OUTBOX_BATCH)
        if batch:
            crash_point("outbox_after_claim")
            async_task(
                DELIVER_TASK,
                batch,
                claim,
                task_name=f"deliver {len(batch)} event(s)",
                # The outbox rows are the record of a delivery: django-q2 keeps the
                # failures only, not a Success row for every batch.
                save=False,
                broker=broker,
            )
        return len(batch)

    def run(self) -> None:
        from django_q.brokers import get_broker
        from django_q.tasks import async_task

        batch = settings.PRICEFEED_OUTBOX_BATCH
        poll = settings.PRICEFEED_OUTBOX_POLL_INTERVAL
        next_sweep = 0.0
        # Connections made from now on (each loop has its own); the one already open
        # is set at once.
        connection_created.connect(_commit_without_flush)
        if connection.connection is not None:
            _commit_without_flush(None, connection)
        # One broker per loop (async_task would make one per task): it keeps the time of
        # its last connection check (core.taskqueue).
        broker = get_broker()
        listener = NotifyListener(services.CHANNEL)
        helpers = [
            threading.Thread(target=self._helper, name=f"outbox-lane-{n}", daemon=True)
            for n in range(1, LANES)
        ]
        for helper in helpers:
            helper.start()
        logger.info("dispatch_outbox started dispatcher=%s", self.dispatcher_id)
        try:
            while not self.stop.is_set():
                try:
                    if time.monotonic() >= next_sweep:
                        next_sweep = time.monotonic() + settings.PRICEFEED_SWEEP_INTERVAL
                        services.events_expire_claims()
                    if self._step(broker, async_task) == batch:
                        self.backlog.set()  # more are probably waiting: no sleep
                        continue
                except Exception:
                    logger.exception("dispatch step failed dispatcher=%s", self.dispatcher_id)
                    close_old_connections()
                    self.stop.wait(poll)
                    continue
                listener.wait(poll, self.stop)
        finally:
            self.backlog.set()  # the helpers see the stop at once
            for helper in helpers:
                helper.join(poll + 5)
            listener.close()
            connection_created.disconnect(_commit_without_flush)
            logger.info("dispatch_outbox stopped dispatcher=%s", self.dispatcher_id)

    def _helper(self) -> None:
        """Another claim loop, on its own connection, from the moment the first loop
        claims a full batch until a claim comes back short."""
        from django_q.brokers import get_broker
        from django_q.tasks import async_task

        batch = settings.PRICEFEED_OUTBOX_BATCH
        poll = settings.PRICEFEED_OUTBOX_POLL_INTERVAL
        broker = get_broker()
        try:
            while not self.stop.is_set():
                if not self.backlog.wait(poll):
                    continue
                self.backlog.clear()  # a hint: the first loop sets it again while full
                try:
                    while not self.stop.is_set() and self._step(broker, async_task) == batch:
                        pass
                except Exception:
                    logger.exception("dispatch step failed dispatcher=%s", self.dispatcher_id)
                    close_old_connections()
                    self.stop.wait(poll)
        finally:
            connection.close()  # this thread's own
