"""A long-running process's heartbeat: registered (and refused on a broker mismatch) at
start, kept fresh every ``PRICEFEED_HEARTBEAT_INTERVAL``, marked stopped at exit."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError, connection

from core import brokers

from . import services
from .exceptions import BrokerMismatch

logger = logging.getLogger(__name__)


class ProcessHeartbeat:
    def __init__(self, *, process_id: str, kind: str) -> None:
        self.process_id = process_id
        self.kind = kind
        self.pid = os.getpid()
        self.broker = brokers.fingerprint()

    def register(self) -> None:
        """Raises CommandError (the refusal, one line) on a broker mismatch."""
        try:
            services.process_register(
                process_id=self.process_id, kind=self.kind, pid=self.pid, broker=self.broker
            )
        except BrokerMismatch as exc:
            raise CommandError(str(exc)) from exc

    def beat(self) -> None:
        try:
            services.process_beat(
                process_id=self.process_id, kind=self.kind, pid=self.pid, broker=self.broker
            )
        except DatabaseError as exc:
            # Retried at the next beat; a database that stays away stops the process's
            # own work loop anyway.
            logger.warning("process heartbeat failed process=%s: %s", self.process_id, exc)

    def stopped(self) -> None:
        try:
            services.process_stopped(process_id=self.process_id)
        except DatabaseError as exc:
            logger.warning("cannot mark the process stopped process=%s: %s", self.process_id, exc)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Registers, beats in a daemon thread while the block runs, marks stopped after."""
        self.register()
        done = threading.Event()

        def loop() -> None:
            try:
                while not done.wait(settings.PRICEFEED_HEARTBEAT_INTERVAL):
                    self.beat()
            finally:
                connection.close()

        thread = threading.Thread(target=loop, name=f"{self.kind}-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(timeout=settings.PRICEFEED_HEARTBEAT_INTERVAL + 5)
            self.stopped()
