from __future__ import annotations

import gc
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from core.metrics_server import serving_metrics
from fleet.heartbeat import ProcessHeartbeat
from fleet.models import ProcessKind
from outbox.dispatcher import Dispatcher


class Command(BaseCommand):
    help = "Claims outbox events in batches and hands them to the django-q2 workers."

    def add_arguments(self, parser):
        parser.add_argument(
            "--dispatcher-id",
            default=None,
            help="Name in claimed_by (default PRICEFEED_INSTANCE_ID).",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="Serve /metrics on this port of PRICEFEED_METRICS_ADDRESS, 0 = not "
            "(default PRICEFEED_OUTBOX_METRICS_PORT).",
        )

    def handle(self, *args, **options):
        dispatcher_id = options["dispatcher_id"] or f"outbox:{settings.PRICEFEED_INSTANCE_ID}"
        # Refused when the live processes hand work to another broker.
        heartbeat = ProcessHeartbeat(process_id=dispatcher_id, kind=ProcessKind.DISPATCH_OUTBOX)
        stop = threading.Event()

        def on_signal(signum, _frame):
            # Claimed batches are already with the workers: stop claiming and exit.
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        # What is loaded by now lives as long as the process: the collector need not
        # walk it again at every collection (core.workers.on_worker_spawn says more).
        gc.freeze()
        with (
            serving_metrics(options["metrics_port"], "PRICEFEED_OUTBOX_METRICS_PORT"),
            heartbeat.running(),
        ):
            Dispatcher(dispatcher_id=dispatcher_id, stop=stop).run()
