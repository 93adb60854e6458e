from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.metrics_server import MetricsPortError, start_metrics_port
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
        port = options["metrics_port"]
        if port is None:
            port = settings.PRICEFEED_OUTBOX_METRICS_PORT
        try:
            metrics = start_metrics_port(port, "PRICEFEED_OUTBOX_METRICS_PORT")
        except MetricsPortError as exc:
            raise CommandError(str(exc)) from exc
        try:
            with heartbeat.running():
                Dispatcher(dispatcher_id=dispatcher_id, stop=stop).run()
        finally:
            if metrics is not None:
                metrics.stop()
