"""django-q2's ``qcluster``, with a heartbeat: the cluster records the broker it uses,
and refuses to start when the live processes use another one.

It takes the place of django-q2's own command (``fleet`` comes before ``django_q`` in
INSTALLED_APPS) and does what that one does. The main process of a cluster only waits
for its sentinel after starting it, so it keeps the heartbeat in that wait: no thread,
and no database connection held open while the sentinel is forked.
"""

from __future__ import annotations

import os
import threading

from django.conf import settings
from django.db import connections
from django_q.cluster import Cluster
from django_q.management.commands.qcluster import Command as QclusterCommand

from fleet.heartbeat import ProcessHeartbeat
from fleet.models import ProcessKind


class Command(QclusterCommand):
    def handle(self, *args, **options):
        settings.SECRET_KEY  # noqa: B018 (as django-q2's: signing needs it)
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        heartbeat = ProcessHeartbeat(
            process_id=f"qcluster:{settings.PRICEFEED_INSTANCE_ID}", kind=ProcessKind.QCLUSTER
        )
        heartbeat.register()
        connections.close_all()  # not inherited by the sentinel and its workers
        try:
            cluster = Cluster()
            cluster.start()
            if options.get("run_once", False):
                cluster.stop()
            # SIGTERM/SIGINT run django-q2's handler in this thread (it stops the
            # sentinel); this wait goes on between them.
            pause = threading.Event()
            while cluster.sentinel.is_alive():
                heartbeat.beat()
                pause.wait(settings.PRICEFEED_HEARTBEAT_INTERVAL)
        finally:
            heartbeat.stopped()
            connections.close_all()
