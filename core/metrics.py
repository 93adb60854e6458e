"""Event metrics: counters and histograms emitted where things happen, in whichever
process that is (gunicorn workers, django-q2 workers, ``listen_mail``).

Every app may import this module (core is the lowest layer); ``monitoring.metrics``
exposes them at ``/metrics`` beside the state gauges it computes from the database.

They live on ``EVENTS``, a registry of their own (not prometheus_client's global
``REGISTRY``, which would add the process and platform collectors of whichever gunicorn
worker happens to answer). With ``PROMETHEUS_MULTIPROC_DIR`` set in the environment
*before* prometheus_client is first imported, each process writes its values to files in
that directory and ``/metrics`` adds up the files of every process (see
docs/operations.md, "Metrics"); without it, ``/metrics`` shows only the events of the
process that answers, which is enough for tests and a single process.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

EVENTS = CollectorRegistry(auto_describe=True)

# Parsing takes up to PRICEFEED_PARSE_MAX_SECONDS (180 by default); a message waits for
# its import from seconds (workers idle) to an hour (a backlog).
_DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)

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
