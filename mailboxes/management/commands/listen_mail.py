from __future__ import annotations

import functools
import logging
import os
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.backends.signals import connection_created

from core.metrics_server import serving_metrics
from fleet.heartbeat import ProcessHeartbeat
from fleet.models import ProcessKind
from mailboxes.leases import listener_session_setup
from mailboxes.supervisor import Supervisor

logger = logging.getLogger("mailboxes.supervisor")


class Command(BaseCommand):
    help = "Listens to every enabled mailbox with IMAP IDLE and records each message once."

    def add_arguments(self, parser):
        parser.add_argument(
            "--mailbox",
            action="append",
            dest="mailboxes",
            help="Listen only to this mailbox (by name); repeatable.",
        )
        parser.add_argument(
            "--status-file",
            default=None,
            help="Write the mailboxes listened to here, as JSON "
            "(default PRICEFEED_LISTENER_STATUS_FILE).",
        )
        parser.add_argument(
            "--instance-id",
            default=None,
            help="Instance id (default PRICEFEED_INSTANCE_ID, host:pid).",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="Serve /metrics on this port of PRICEFEED_METRICS_ADDRESS, 0 = not "
            "(default PRICEFEED_LISTENER_METRICS_PORT).",
        )

    def handle(self, *args, **options):
        ttl, beat = settings.PRICEFEED_LEASE_TTL, settings.PRICEFEED_HEARTBEAT_INTERVAL
        if beat <= 0 or ttl < 3 * beat:
            raise CommandError(
                f"PRICEFEED_LEASE_TTL ({ttl:g}s) must be at least three heartbeats "
                f"(PRICEFEED_HEARTBEAT_INTERVAL = {beat:g}s): a lease must survive a "
                "missed renewal."
            )
        window = settings.PRICEFEED_LIVENESS_WINDOW
        if window < 3 * beat:
            raise CommandError(
                f"PRICEFEED_LIVENESS_WINDOW ({window:g}s) must be at least three heartbeats "
                f"(PRICEFEED_HEARTBEAT_INTERVAL = {beat:g}s): a live instance must not be "
                "counted dead for one late heartbeat."
            )
        # Every database session of this process, including those opened later.
        setup = functools.partial(listener_session_setup, ttl=ttl)
        connection_created.connect(setup, weak=False, dispatch_uid="listen_mail.session")
        if connection.connection is not None:
            setup(connection=connection)
        stop = threading.Event()
        signals = {"count": 0}

        def on_signal(signum, _frame):
            signals["count"] += 1
            if signals["count"] > 1:
                logger.warning("second signal: exiting now; leases expire by themselves")
                os._exit(1)
            logger.info(
                "signal %s: finishing in-flight work, then stopping", signal.Signals(signum).name
            )
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        instance_id = options["instance_id"] or settings.PRICEFEED_INSTANCE_ID
        supervisor = Supervisor(
            instance_id=instance_id,
            stop=stop,
            only=set(options["mailboxes"]) if options["mailboxes"] else None,
            status_file=options["status_file"] or settings.PRICEFEED_LISTENER_STATUS_FILE,
        )
        # The broker this instance hands messages to: refused when the live processes
        # use another one (fleet.ProcessHeartbeat; InstanceHeartbeat is the leases').
        heartbeat = ProcessHeartbeat(
            process_id=f"listen_mail:{instance_id}", kind=ProcessKind.LISTEN_MAIL
        )
        with (
            serving_metrics(options["metrics_port"], "PRICEFEED_LISTENER_METRICS_PORT"),
            heartbeat.running(),
        ):
            supervisor.run()
