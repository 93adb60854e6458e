"""The probes /healthz and /readyz, and /metrics, answered before any other middleware
runs.

Orchestrators probe over plain HTTP with whatever Host they have (kubelet sends the
pod's IP, a load balancer its own idea), without a session or a CSRF token. Behind the
rest of the stack such a request would be redirected to HTTPS (``SECURE_SSL_REDIRECT``)
or refused as a host not in ``ALLOWED_HOSTS`` (``CommonMiddleware`` validates the host
of every request), so ``ProbeMiddleware`` sits first in ``MIDDLEWARE`` and answers
exactly these paths itself: nothing after it runs for them, nothing about the request
is read but its path and method (and for /metrics its ``Authorization`` header), and the
probes' answers say no more than check names and ok or failed. Prometheus scrapes the
same way (by address, over HTTP), so /metrics is answered here too, behind its own token
(monitoring.metrics.authorization) instead of the host check. Every other request passes
through untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers

from . import metrics as metrics_
from . import probes


class ProbeResponse(HttpResponse):
    """A probe's answer. Never cached; and never logged by Django's request logger,
    which would log every failed readiness probe at ERROR (and mail it to ADMINS): the
    probes log a failing check themselves, once (probes._log_changes)."""

    _has_been_logged = True


def _answer(request: HttpRequest, status: int, body: str, content_type: str) -> ProbeResponse:
    if request.method not in ("GET", "HEAD"):
        response = ProbeResponse(status=405, content_type="text/plain")
        response["Allow"] = "GET, HEAD"
    else:
        content = body.encode() if request.method == "GET" else b""
        response = ProbeResponse(content, status=status, content_type=content_type)
    add_never_cache_headers(response)
    return response


def healthz(request: HttpRequest) -> ProbeResponse:
    """The process is alive and serving requests: 200 ``ok``. Touches no database."""
    return _answer(request, 200, "ok\n", "text/plain; charset=utf-8")


def readyz(request: HttpRequest) -> ProbeResponse:
    """Ready for work: 200 when every check (probes.readiness) passes, else 503 naming
    the failed ones: ``{"status": "failed", "failed": ["broker"], "checks": {...}}``."""
    if request.method not in ("GET", "HEAD"):
        return _answer(request, 405, "", "text/plain")  # before any check runs
    results = probes.readiness()
    failed = [r.name for r in results if not r.ok]
    report: dict[str, object] = {"status": "failed" if failed else "ok"}
    if failed:
        report["failed"] = failed
    report["checks"] = {r.name: "ok" if r.ok else "failed" for r in results}
    body = json.dumps(report) + "\n"
    return _answer(request, 503 if failed else 200, body, "application/json")


def metrics(request: HttpRequest) -> HttpResponse:
    """Every Prometheus series (monitoring.metrics): 200 in the text exposition format;
    401 or 403 when the token is missing or wrong (checked before any query)."""
    if request.method not in ("GET", "HEAD"):
        return _answer(request, 405, "", "text/plain")
    refused = metrics_.refusal(request)
    if refused is not None:
        add_never_cache_headers(refused)
        return refused
    body, content_type = metrics_.exposition()
    response = ProbeResponse(
        body if request.method == "GET" else b"", status=200, content_type=content_type
    )
    add_never_cache_headers(response)
    return response


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
    "/metrics": metrics,
}


class ProbeMiddleware:
    """Answers ``PROBES`` (exactly these paths) itself; first in ``MIDDLEWARE``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is None:
            return self.get_response(request)
        return probe(request)
