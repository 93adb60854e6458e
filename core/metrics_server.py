"""The metrics port: ``/metrics`` served by a process that is not the web process
(``listen_mail``, ``dispatch_outbox``), for hosts where no gunicorn runs.

One daemon thread with a plain ``http.server`` answers ``GET /metrics`` (and ``HEAD``)
with what the web process's ``/metrics`` answers (``core.metrics.exposition``: the event
metrics of this host, and the state gauges once the monitoring app has set them), behind
the same bearer token (``core.metrics.authorization``). Requests are answered one at a
time, each with a 10-second socket timeout, and the thread's database connection is
closed after each: a scrape costs one connection for the length of the scrape.

Bound to ``PRICEFEED_METRICS_ADDRESS`` (127.0.0.1 by default); the port comes from the
command (``PRICEFEED_LISTENER_METRICS_PORT``, ``PRICEFEED_OUTBOX_METRICS_PORT``; 0 = off).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connections

from . import metrics

logger = logging.getLogger(__name__)

PATH = "/metrics"


class _Handler(BaseHTTPRequestHandler):
    server_version = "pricefeed-metrics"
    sys_version = ""
    timeout = 10.0  # a client that sends nothing does not hold the port for long

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        if self.path.partition("?")[0] != PATH:
            self._send(404, b"not found\n", "text/plain; charset=utf-8", body=body)
            return
        code = metrics.authorization(self.headers.get("Authorization", ""))
        if code is not None:
            logger.warning(
                "metrics port: refused a scrape from %s (%s)",
                self.client_address[0],
                code,
                extra={"action": "metrics_refused"},
            )
            headers = {"WWW-Authenticate": metrics.CHALLENGE} if code == 401 else {}
            text = metrics.refusal_text(code).encode()
            self._send(code, text, "text/plain; charset=utf-8", body=body, headers=headers)
            return
        try:
            content, content_type = metrics.exposition()
        except Exception:
            logger.exception("metrics port: the series could not be made")
            self._send(500, b"internal error\n", "text/plain; charset=utf-8", body=body)
            return
        finally:
            connections.close_all()  # this thread's; opened again by the next scrape
        self._send(200, content, content_type, body=body)

    def _send(
        self,
        code: int,
        content: bytes,
        content_type: str,
        *,
        body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(content)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(content)

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("metrics port: " + format, *args)


class _Server6(HTTPServer):
    address_family = socket.AF_INET6


class MetricsServer:
    """``/metrics`` on ``address:port`` in a daemon thread, from ``start`` to ``stop``."""

    def __init__(self, address: str, port: int) -> None:
        self.address = address
        self.port = port
        self._server: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}{PATH}"

    def start(self) -> MetricsServer:
        """Binds (OSError when the port is taken or the address is not this host's)
        and starts answering."""
        server_class = _Server6 if ":" in self.address else HTTPServer
        self._server = server_class((self.address, self.port), _Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="metrics-port",
            daemon=True,
        )
        self._thread.start()
        logger.info(
            "metrics served on %s",
            self.url,
            extra={"action": "metrics_port"},
        )
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class MetricsPortError(Exception):
    """The metrics port could not be opened (taken, or not an address of this host)."""


@contextmanager
def serving_metrics(option: int | None, setting: str) -> Iterator[None]:
    """For a command's run: its metrics port served (``--metrics-port``, else the
    setting named ``setting``; 0 = none), stopped on the way out. A port that cannot be
    bound stops the command with a ``CommandError`` naming the setting."""
    port = option if option is not None else getattr(settings, setting)
    try:
        server = start_metrics_port(port, setting)
    except MetricsPortError as exc:
        raise CommandError(str(exc)) from exc
    try:
        yield
    finally:
        if server is not None:
            server.stop()


def start_metrics_port(port: int, setting: str) -> MetricsServer | None:
    """A started ``MetricsServer`` on ``PRICEFEED_METRICS_ADDRESS:port`` when ``port`` is
    above 0 (``setting`` names where it came from, for the error), else None. The caller
    stops it."""
    if port <= 0:
        return None
    address = settings.PRICEFEED_METRICS_ADDRESS
    try:
        return MetricsServer(address, port).start()
    except OSError as exc:
        raise MetricsPortError(
            f"cannot serve metrics on {address}:{port} ({setting}, "
            f"PRICEFEED_METRICS_ADDRESS): {exc}"
        ) from exc
