"""Event metrics: counters and histograms emitted where things happen, in whichever
process that is (gunicorn workers, django-q2 workers, ``listen_mail``).

Every app may import this module (core is the lowest layer); ``monitoring.metrics``
exposes them at ``/metrics`` beside the state gauges it computes from the database, and
``core.metrics_server`` serves the same answer on a port of its own for the processes
that run where no web process does (``listen_mail``, ``dispatch_outbox``).

They live on ``EVENTS``, a registry of their own (not prometheus_client's global
``REGISTRY``, which would add the process and platform collectors of whichever gunicorn
worker happens to answer). With ``PROMETHEUS_MULTIPROC_DIR`` set in the environment
*before* prometheus_client is first imported, each process writes its values to files in
that directory and ``/metrics`` adds up the files of every process (see
docs/operations.md, "Metrics"); without it, ``/metrics`` shows only the events of the
process that answers, which is enough for tests and a single process.

Only counters and histograms: they add up across processes as they are, where a gauge
would need a multiprocess mode and ``mark_process_dead`` for every exiting process. What
is a level (backlogs, statuses, leases) is read from the database at scrape time
(``monitoring.metrics.StateCollector``).
"""

from __future__ import annotations

import glob
import hmac
import os
import time
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

EVENTS = CollectorRegistry(auto_describe=True)

# Parsing takes up to PRICEFEED_PARSE_MAX_SECONDS (180 by default); a message waits for
# its import from seconds (workers idle) to an hour (a backlog).
_DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)
# From the server's INTERNALDATE (whole seconds) to our commit: about a second when the
# listener idles, up to PRICEFEED_IMAP_CHECK_INTERVAL (20 s) on a server whose IDLE polls,
# minutes to hours behind a backlog or an outage.
_ARRIVAL_BUCKETS = (
    0.5,
    1.0,
    2.0,
    3.0,
    5.0,
    10.0,
    20.0,
    30.0,
    60.0,
    120.0,
    300.0,
    900.0,
    3600.0,
    14400.0,
)

IMPORT_ROWS_STORED = Counter(
    "pricefeed_import_rows_stored",
    "Price rows stored by finished imports (SUCCEEDED and PARTIAL; a FAILED one keeps none).",
    registry=EVENTS,
)
IMPORTS_FINISHED = Counter(
    "pricefeed_imports_finished",
    "Price imports finished, by final status (SUCCEEDED, PARTIAL, FAILED).",
    ["status"],
    registry=EVENTS,
)
IMPORT_PARSE = Histogram(
    "pricefeed_import_parse_seconds",
    "Parsing one import's file and streaming its rows into the database (failed ones too).",
    buckets=_DURATION_BUCKETS,
    registry=EVENTS,
)
IMPORT_END_TO_END = Histogram(
    "pricefeed_import_end_to_end_seconds",
    "From the message's received_at (recorded by listen_mail) to its import finished.",
    buckets=_DURATION_BUCKETS,
    registry=EVENTS,
)

# -- listen_mail -------------------------------------------------------------------------
# Labelled by mailbox name: one series per mailbox (a renamed mailbox starts new ones).

IMAP_CONNECTIONS = Counter(
    "pricefeed_imap_connections",
    "IMAP connections a listener opened (logged in, folder selected), reconnects included.",
    ["mailbox"],
    registry=EVENTS,
)
IMAP_CONNECTION_FAILURES = Counter(
    "pricefeed_imap_connection_failures",
    "Listener connections that failed to open or broke while listening (each is retried).",
    ["mailbox"],
    registry=EVENTS,
)
IMAP_RECONNECTS = Counter(
    "pricefeed_imap_reconnects",
    "Listener connections opened again after one or more failures.",
    ["mailbox"],
    registry=EVENTS,
)
MESSAGES_RECORDED = Counter(
    "pricefeed_messages_recorded",
    "Inbound messages recorded by listen_mail, by status at recording (RECEIVED, REJECTED).",
    ["status"],
    registry=EVENTS,
)
MESSAGE_ARRIVAL_TO_RECORDED = Histogram(
    "pricefeed_message_arrival_to_recorded_seconds",
    "From the IMAP server's INTERNALDATE of a message (server clock, whole seconds) to its "
    "record committed by listen_mail; negatives (clock skew) count as 0.",
    buckets=_ARRIVAL_BUCKETS,
    registry=EVENTS,
)

# -- rates (pricing) ---------------------------------------------------------------------

RATE_FETCH_FAILURES = Counter(
    "pricefeed_rate_fetch_failures",
    "Fetches of the Bank of Russia's rates that failed, by problem (each is retried).",
    ["problem"],
    registry=EVENTS,
)

# -- customer price lists (feeds) --------------------------------------------------------

CUSTOMER_LISTS_SENT = Counter(
    "pricefeed_customer_lists_sent",
    "Customer price lists mailed: mailings marked SENT once the SMTP server accepted them.",
    registry=EVENTS,
)
CUSTOMER_LIST_SEND_ERRORS = Counter(
    "pricefeed_customer_list_send_errors",
    "Customer price list mails refused or not sent on an attempt (retried or failed).",
    registry=EVENTS,
)
CUSTOMER_LISTS_FAILED = Counter(
    "pricefeed_customer_lists_failed",
    "Customer price list mailings marked FAILED: their last attempt failed.",
    registry=EVENTS,
)

# -- notifications -----------------------------------------------------------------------

NOTIFICATIONS_SENT = Counter(
    "pricefeed_notifications_sent",
    "Notifications marked SENT after the SMTP server accepted their mail (a digest counts "
    "each notification it carries).",
    registry=EVENTS,
)
NOTIFICATION_SEND_ERRORS = Counter(
    "pricefeed_notification_send_errors",
    "Notifications whose mail could not be made or sent on an attempt (retried or failed).",
    registry=EVENTS,
)
NOTIFICATIONS_FAILED = Counter(
    "pricefeed_notifications_failed",
    "Notifications marked FAILED: their last delivery attempt failed.",
    registry=EVENTS,
)


# -- event delivery (webhooks, RabbitMQ) -----------------------------------------------

DELIVERIES_SENT = Counter(
    "pricefeed_deliveries_sent",
    "Deliveries of an event to a webhook or RabbitMQ that took effect, by channel.",
    ["channel"],
    registry=EVENTS,
)
DELIVERY_ERRORS = Counter(
    "pricefeed_delivery_errors",
    "Attempts to deliver an event to a webhook or RabbitMQ that failed (retried or "
    "failed), by channel.",
    ["channel"],
    registry=EVENTS,
)
DELIVERIES_FAILED = Counter(
    "pricefeed_deliveries_failed",
    "Deliveries marked FAILED: their last attempt failed, by channel.",
    ["channel"],
    registry=EVENTS,
)


def observe_arrival(internal_date: datetime | None, *, now: float | None = None) -> None:
    """Observes one recorded message's wait from the server's INTERNALDATE (when the
    server got it) to ``now`` (default: this moment, just after the commit). Nothing for
    a message without a usable date (none, or without a time zone); a negative wait (the
    server's clock ahead of ours) counts as 0."""
    if internal_date is None or internal_date.utcoffset() is None:
        return
    waited = (time.time() if now is None else now) - internal_date.timestamp()
    MESSAGE_ARRIVAL_TO_RECORDED.observe(max(0.0, waited))


# -- exposition --------------------------------------------------------------------------


class ProcessFilesCollector(MultiProcessCollector):
    """prometheus_client's collector of every process's metric files in
    ``PROMETHEUS_MULTIPROC_DIR``, leaving out a file its process is still making.

    A process creates its file empty and only then sizes it (prometheus_client's
    MmapedDict). A scrape in between failed to read the empty file (``struct.error``)
    and the whole /metrics answered 500: seen when gunicorn's workers started together.
    An empty file holds no values yet, so leaving it out loses nothing; the next scrape
    reads it. A file only ever grows, so one found sized stays readable."""

    def __init__(self, registry: CollectorRegistry | None, path: str | None = None) -> None:
        self.directory = path or os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
        super().__init__(registry, self.directory)  # checks the directory, registers

    def collect(self):
        files = glob.glob(os.path.join(self.directory, "*.db"))
        return self.merge([path for path in files if _sized(path)], accumulate=True)


def _sized(path: str) -> bool:
    """Whether a metric file has its header (the 8 bytes saying how much of it is used)."""
    try:
        return os.path.getsize(path) >= 8
    except FileNotFoundError:  # a process's file removed since the listing
        return False


def events_registry() -> CollectorRegistry:
    """The event metrics to expose: with ``PROMETHEUS_MULTIPROC_DIR`` set, those of every
    process of this host (from their files); else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry(auto_describe=False)
        ProcessFilesCollector(registry)  # registers itself
        return registry
    return EVENTS


def _events_exposition() -> tuple[bytes, str]:
    return generate_latest(events_registry()), CONTENT_TYPE_LATEST


# What a scrape answers: the event metrics alone, unless an app above core (monitoring)
# sets a fuller answer (its state gauges too) with set_exposition at start-up.
_exposition: Callable[[], tuple[bytes, str]] = _events_exposition


def set_exposition(answer: Callable[[], tuple[bytes, str]]) -> None:
    """Makes ``answer`` (the text of every series and its content type) what a scrape of
    the metrics port returns."""
    global _exposition
    _exposition = answer


def exposition() -> tuple[bytes, str]:
    """The text of every series and its content type, as /metrics answers it."""
    return _exposition()


def authorization(header: str) -> int | None:
    """None when a scrape with this ``Authorization`` header may read the metrics, else
    the status to refuse it with: 401 without ``Bearer <token>`` (403 with a wrong one)
    when ``PRICEFEED_METRICS_TOKEN`` is set; 403 when it is not and DEBUG is off
    (production requires a token); with DEBUG on and no token, everyone may. The token is
    compared in constant time."""
    token: str = settings.PRICEFEED_METRICS_TOKEN
    if not token:
        return None if settings.DEBUG else 403
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return 401
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        return 403
    return None


def refusal_text(code: int) -> str:
    """The body of a refusal with ``code`` (from ``authorization``)."""
    if code == 401:
        return "Authorization: Bearer <PRICEFEED_METRICS_TOKEN> required\n"
    if settings.PRICEFEED_METRICS_TOKEN:
        return "wrong token\n"
    return "set PRICEFEED_METRICS_TOKEN to serve /metrics with DEBUG off\n"


# The challenge sent with a 401.
CHALLENGE = 'Bearer realm="pricefeed metrics"'
