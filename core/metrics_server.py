"""The metrics port: ``/metrics`` served by a process that is not the web process
(``listen_mail``, ``dispatch_outbox``), for hosts where no gunicorn runs.

A plain ``http.server`` in a daemon thread answers ``GET /metrics`` (and ``HEAD``) with
what the web process's ``/metrics`` answers (``core.metrics.exposition``: the event
metrics of this host, and the state gauges once the monitoring app has set them), behind
the same bearer token (``core.metrics.authorization``).

Each connection has a thread of its own (at most MAX_CONNECTIONS at once, and
PER_ADDRESS from one client address, so that one client cannot take the slots
Prometheus needs; one more is closed at once) and a deadline: REQUEST_DEADLINE seconds
after it was accepted it is cut, whatever it is doing. A client that trickles a byte
every few seconds cannot hold the port: other scrapes are answered meanwhile, and it is
gone after the deadline. The thread's database connection is closed after each scrape.

Bound to ``PRICEFEED_METRICS_ADDRESS`` (127.0.0.1 by default); the port comes from the
command (``PRICEFEED_LISTENER_METRICS_PORT``, ``PRICEFEED_OUTBOX_METRICS_PORT``; 0 = off).
Off loopback the bearer token would cross the network: there the port serves HTTPS
with ``PRICEFEED_METRICS_TLS_CERT`` and ``PRICEFEED_METRICS_TLS_KEY``, and refuses to
start without them.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connections

from . import metrics
from .hosts import loopback

logger = logging.getLogger(__name__)

PATH = "/metrics"
# Seconds a connection may last from its accept to its end, TLS handshake included (a
# scrape takes tens of milliseconds; Prometheus's own scrape timeout is 10 s).
REQUEST_DEADLINE = 5.0
# Connections served at once; beyond, a new one is closed unanswered. Each is gone
# within REQUEST_DEADLINE, so no client holds a slot for long.
MAX_CONNECTIONS = 32
PER_ADDRESS = 4


class _Handler(BaseHTTPRequestHandler):
    server_version = "pricefeed-metrics"
    sys_version = ""
    timeout = REQUEST_DEADLINE  # no single read waits longer than the whole deadline

    def handle(self) -> None:
        """The request, cut at the connection's deadline: the socket is shut down, so
        whatever read or write is waiting returns at once."""
        deadline = threading.Timer(REQUEST_DEADLINE, self._cut)
        deadline.daemon = True
        deadline.start()
        try:
            super().handle()
        except (OSError, ValueError):
            pass  # cut at the deadline, or the client went away: nothing to answer
        finally:
            deadline.cancel()

    def _cut(self) -> None:
        logger.warning(
            "metrics port: cut a connection from %s at its %ss deadline",
            self.client_address[0],
            REQUEST_DEADLINE,
            extra={"action": "metrics_deadline"},
        )
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed

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


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most MAX_CONNECTIONS at once and PER_ADDRESS from
    one client address."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], tls: ssl.SSLContext | None) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()  # connections served, by client address
        super().__init__(address, _Handler)
        if tls is not None:
            # The handshake happens in the connection's thread, under its deadline,
            # never in the thread that accepts.
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    def process_request(self, request, client_address) -> None:
        client = client_address[0]
        with self._lock:
            admitted = self._open.total() < MAX_CONNECTIONS and self._open[client] < PER_ADDRESS
            if admitted:
                self._open[client] += 1
        if not admitted:
            logger.warning(
                "metrics port: too many connections open, closed one more from %s",
                client,
                extra={"action": "metrics_busy"},
            )
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def handle_error(self, request, client_address) -> None:
        # socketserver would print the traceback to stderr: a client that went away (or
        # was cut) mid-answer is no error of ours.
        logger.debug("metrics port: connection from %s ended early", client_address[0])

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open[client_address[0]] -= 1
                self._open += Counter()  # drops the addresses at zero


def tls_context() -> ssl.SSLContext | None:
    """The port's TLS (PRICEFEED_METRICS_TLS_CERT and _KEY), or None when unset."""
    cert, key = settings.PRICEFEED_METRICS_TLS_CERT, settings.PRICEFEED_METRICS_TLS_KEY
    if not (cert or key):
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key or None)
    return context


class MetricsServer:
    """``/metrics`` on ``address:port`` in a daemon thread, from ``start`` to ``stop``."""

    def __init__(self, address: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        self.address = address
        self.port = port
        self.tls = tls
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host}:{self.port}{PATH}"

    def start(self) -> MetricsServer:
        """Binds (OSError when the port is taken or the address is not this host's)
        and starts answering."""
        self._server = _Server((self.address, self.port), self.tls)
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
        tls = tls_context()
    except (OSError, ssl.SSLError) as exc:
        raise MetricsPortError(
            f"cannot read the metrics port's certificate or key (PRICEFEED_METRICS_TLS_CERT, "
            f"PRICEFEED_METRICS_TLS_KEY): {exc}"
        ) from exc
    if tls is None and not loopback(address):
        raise MetricsPortError(
            f"refusing to serve metrics on {address}:{port} ({setting}) without TLS: off "
            "loopback the bearer token would cross the network in clear. Set "
            "PRICEFEED_METRICS_TLS_CERT and PRICEFEED_METRICS_TLS_KEY, or bind "
            "PRICEFEED_METRICS_ADDRESS to 127.0.0.1."
        )
    try:
        return MetricsServer(address, port, tls).start()
    except OSError as exc:
        raise MetricsPortError(
            f"cannot serve metrics on {address}:{port} ({setting}, "
            f"PRICEFEED_METRICS_ADDRESS): {exc}"
        ) from exc
