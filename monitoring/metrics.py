"""``/metrics``: Prometheus series of the whole installation.

Two kinds, in one answer:

- **State gauges**, computed at scrape time from the database by ``StateCollector``
  through the same selectors as ``pricefeed_status`` (monitoring.status): the same
  numbers whichever process answers, so they need no multiprocess mode.
- **Event counters and histograms** (core.metrics.EVENTS), emitted where things happen.
  With ``PROMETHEUS_MULTIPROC_DIR`` set they are read from the files every process of
  the deployment writes there; without it, from this process only.

The token (``PRICEFEED_METRICS_TOKEN``) is checked (``refusal``) before anything is
queried. The same answer is served on the metrics port of ``listen_mail`` and
``dispatch_outbox`` (core.metrics_server) once ``MonitoringConfig.ready`` has handed
``exposition`` to core.metrics.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from core import metrics as core_metrics

from . import status

logger = logging.getLogger(__name__)

# The listen_mail instance states of mailboxes.selectors.instance_state, each always
# present (0 when none) so that an alert on state="live" sees a 0, not a missing series.
INSTANCE_STATES = ("live", "dead", "stopped")


class StateCollector(Collector):
    """The state gauges, read from the database on each collect (a scrape): a handful of
    aggregate queries, the ones ``pricefeed_status`` runs.

    When the database cannot be read, only ``pricefeed_state_up 0`` is reported (and a
    warning logged), so that the scrape itself succeeds and an alert can say why."""

    def collect(self) -> Iterable[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "pricefeed_state_up",
            "1 when the state gauges could be read from the database, else 0.",
        )
        try:
            report = status.status_report()
        except DatabaseError as exc:
            logger.warning(
                "metrics: cannot read the state from the database: %s",
                exc,
                extra={"action": "metrics_state_failed"},
            )
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _state_families(report)


def _state_families(report: status.StatusReport) -> Iterable[GaugeMetricFamily]:
    titles = {
        "messages": "Inbound messages",
        "imports": "Price imports",
        "outbox": "Outbox events",
    }
    names = {
        "messages": "pricefeed_messages",
        "imports": "pricefeed_imports",
        "outbox": "pricefeed_outbox_events",
    }
    work = report.work()
    for kind, summary in work.items():
        family = GaugeMetricFamily(names[kind], f"{titles[kind]} by status.", labels=["status"])
        for value, n in summary.by_status.items():
            family.add_metric([value], n)
        yield family

    def per_work(name: str, documentation: str, values: dict[str, float]) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, documentation, labels=["work"])
        for kind, value in values.items():
            family.add_metric([kind], value)
        return family

    yield per_work(
        "pricefeed_backlog",
        "Rows waiting for a worker (due or backing off); work is messages, imports or outbox.",
        {kind: s.backlog for kind, s in work.items()},
    )
    yield per_work(
        "pricefeed_backlog_due",
        "Of the backlog, the rows due now.",
        {kind: s.due for kind, s in work.items()},
    )
    yield per_work(
        "pricefeed_oldest_due_age_seconds",
        "Seconds since the longest-waiting due row became due (database clock); 0 when none.",
        {kind: s.oldest_due_age or 0.0 for kind, s in work.items()},
    )
    yield per_work(
        "pricefeed_stuck",
        "Rows stuck: claimed longer than the claim timeout, or due longer than allowed.",
        {kind: s.stuck for kind, s in work.items()},
    )

    notifications = GaugeMetricFamily(
        "pricefeed_notifications", "Notifications by status.", labels=["status"]
    )
    for value, n in report.notifications.items():
        notifications.add_metric([value], n)
    yield notifications

    states = Counter(instance.state for instance in report.instances)
    instances = GaugeMetricFamily(
        "pricefeed_listener_instances",
        "listen_mail instances with a heartbeat row, by state (live, dead, stopped).",
        labels=["state"],
    )
    for state in INSTANCE_STATES:
        instances.add_metric([state], states.get(state, 0))
    yield instances

    held = GaugeMetricFamily(
        "pricefeed_leases_held",
        "Unexpired leases on enabled mailboxes held by each listen_mail instance.",
        # Not "instance": Prometheus gives every target that label.
        labels=["listener"],
    )
    for instance in report.instances:
        held.add_metric([instance.instance_id], instance.leases)
    yield held

    unlistened = GaugeMetricFamily(
        "pricefeed_mailboxes_unlistened",
        "Enabled mailboxes with an enabled config without a live listen_mail holding their lease.",
    )
    unlistened.add_metric([], len(report.unlistened))
    yield unlistened


def metrics_registry() -> CollectorRegistry:
    """A registry of the state gauges and the event metrics, made for one scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StateCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Registers itself; reads the files of every process, this one's included.
        core_metrics.ProcessFilesCollector(registry)
    else:
        registry.register(core_metrics.EVENTS)
    return registry


def authorization(request: HttpRequest) -> int | None:
    """None when the request may read the metrics, else the status to refuse it with
    (core.metrics.authorization: 401 without ``Authorization: Bearer <token>``, 403 with a
    wrong one or, with DEBUG off, when ``PRICEFEED_METRICS_TOKEN`` is not set)."""
    return core_metrics.authorization(request.META.get("HTTP_AUTHORIZATION", ""))


def refusal(request: HttpRequest) -> HttpResponse | None:
    """The answer to a request that may not read the metrics (see ``authorization``),
    or None. Refusals are logged by Django's request logger (WARNING), like any 4xx."""
    code = authorization(request)
    if code is None:
        return None
    response = HttpResponse(
        core_metrics.refusal_text(code), status=code, content_type="text/plain; charset=utf-8"
    )
    if code == 401:
        response["WWW-Authenticate"] = core_metrics.CHALLENGE
    return response


def exposition() -> tuple[bytes, str]:
    """The text of every series, and its content type."""
    return generate_latest(metrics_registry()), CONTENT_TYPE_LATEST
