"""The checks behind /readyz: can this process do its work right now?

- ``database``: a connection to the default database is made (or the persistent one
  still answers).
- ``migrations``: every migration of the code running here is applied (the plan of
  ``migrate`` against the loaded migration graph is empty), so the tables are the ones
  the code expects.
- ``broker``: django-q2's broker answers. The ORM broker is a database (``Q_CLUSTER
  ["orm"]``): the same check on that alias. Redis (``PRICEFEED_REDIS_URL``): a PING
  with a timeout of ``BROKER_TIMEOUT`` seconds and no retry.

A check's result is ok or failed; why it failed goes to the log (URL passwords masked),
never into a response.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from core.reporting import mask_url_passwords

logger = logging.getLogger(__name__)

# Seconds the Redis PING may take, connecting included: a probe answers within its
# orchestrator's timeout (kubelet's default is 1 s, load balancers' a few).
BROKER_TIMEOUT = 2.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    reason: str = ""  # why it failed: for the log only


def readiness() -> list[CheckResult]:
    """Runs the checks in order: database, migrations, broker. Those that need a
    database that just failed fail with it, without waiting for a second connect
    timeout."""
    database = _check("database", lambda: _database(DEFAULT_DB_ALIAS))
    if database.ok:
        migrations = _check("migrations", _migrations)
    else:
        migrations = CheckResult("migrations", False, "the database is unreachable")
    results = [database, migrations, _broker(database)]
    _log_changes(results)
    return results


def _check(name: str, check: Callable[[], None]) -> CheckResult:
    """Runs ``check``, which raises when it fails."""
    try:
        check()
    except Exception as exc:
        # Everything a check can meet (refused, timed out, bad credentials, a missing
        # client library) means "not ready"; the detail goes to the log.
        reason = mask_url_passwords(f"{type(exc).__name__}: {exc}".strip())
        return CheckResult(name, False, reason)
    return CheckResult(name, True)


class CheckFailed(Exception):
    """A check found its dependency answering, but not ready."""


def _database(alias: str) -> None:
    conn = connections[alias]
    # Connects when there is no connection; a persistent one is health-checked first
    # (CONN_HEALTH_CHECKS) and replaced when it is dead.
    conn.ensure_connection()
    if not conn.is_usable():
        conn.close()
        raise CheckFailed(f"the connection to database {alias!r} is not usable")


def _migrations() -> None:
    # Every migration of the graph, not only those a migrate to the leaves would run: a
    # hole below an applied leaf (a record deleted, a migration added under a later one)
    # is not applied either.
    loader = MigrationExecutor(connections[DEFAULT_DB_ALIAS]).loader
    graph, applied = loader.graph, loader.applied_migrations
    missing = list(
        dict.fromkeys(
            node
            for leaf in graph.leaf_nodes()
            for node in graph.forwards_plan(leaf)
            if node not in applied
        )
    )
    if missing:
        app_label, name = missing[0]
        raise CheckFailed(f"{len(missing)} migration(s) not applied, the first {app_label}.{name}")


def _broker(database: CheckResult) -> CheckResult:
    cluster: dict[str, Any] = settings.Q_CLUSTER
    if "redis" in cluster:
        return _check("broker", lambda: _redis_ping(cluster["redis"]))
    alias = cluster.get("orm")
    if alias == DEFAULT_DB_ALIAS:
        return CheckResult("broker", database.ok, database.reason)
    if alias:
        return _check("broker", lambda: _database(alias))
    return _check("broker", _other_broker)


def _redis_ping(config: str | dict) -> None:
    """A PING as django-q2's Redis broker would send it (``redis.from_url`` of its
    ``redis`` setting, or its keyword arguments), with short timeouts and no retry."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    options: dict[str, Any] = {
        "socket_connect_timeout": BROKER_TIMEOUT,
        "socket_timeout": BROKER_TIMEOUT,
        "retry": Retry(NoBackoff(), 0),
    }
    if isinstance(config, str):
        client = redis.Redis.from_url(config, **options)
    else:
        client = redis.Redis(**{**config, **options})
    try:
        if not client.ping():
            raise CheckFailed("Redis did not answer PING")
    finally:
        client.close()


def _other_broker() -> None:
    """A broker pricefeed's settings never configure: django-q2's own ping."""
    from django_q.brokers import get_broker

    if not get_broker().ping():
        raise CheckFailed("the broker did not answer its ping")


# What was last logged of each check in this process: None when ok.
_logged: dict[str, str | None] = {}
_logged_lock = threading.Lock()


def _log_changes(results: list[CheckResult]) -> None:
    """Logs a check that fails (WARNING, with the reason) or recovers (INFO) when that
    is news to this process: a probe every few seconds repeats no line."""
    with _logged_lock:
        for result in results:
            now = None if result.ok else result.reason
            before = _logged.get(result.name)  # none yet: taken as ok
            _logged[result.name] = now
            if now == before:
                continue
            if now is None:
                logger.info(
                    "readiness check %s ok again",
                    result.name,
                    extra={"action": "readiness_recovered"},
                )
            else:
                logger.warning(
                    "readiness check %s failed: %s",
                    result.name,
                    now,
                    extra={"action": "readiness_failed"},
                )
