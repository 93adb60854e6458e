"""A webhook receiver for tests, benchmarks and the demo: HTTP/1.1 with keep-alive on
loopback, one thread per connection, every request kept (headers, body, the connection
it came on); the answers can be scripted (``statuses``: the status of each request in
turn, then 200).

    python -m devkit.servers.webhook --port 8765 [--quiet]

run alone, it prints ``listening <port>``, answers ``GET /count`` with how many requests
came, and on SIGTERM prints ``received <count>``.
"""

from __future__ import annotations

import argparse
import signal
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int  # a number per TCP connection, in the order they were accepted
    at: float = field(default_factory=time.time)  # when it came (the epoch, seconds)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: _Server

    def setup(self) -> None:
        super().setup()
        # The answer's head and body go in two writes: without this, the body waited for
        # the client's delayed ACK (Nagle), 40 ms a request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_number = self.server.next_connection()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        status = self.server.receiver.record(
            Received(self.path, dict(self.headers.items()), body, self.connection_number)
        )
        answer = b"ok" if status < 300 else b"try again later"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self) -> None:
        """``GET /count``: how many requests came so far (for a benchmark's check)."""
        answer = str(self.server.receiver.count).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: WebhookReceiver
    _connections = 0

    def next_connection(self) -> int:
        with self.receiver.lock:
            self._connections += 1
            return self._connections


@dataclass
class WebhookReceiver:
    statuses: list[int] = field(default_factory=list)
    keep: bool = True  # keep each request (False: count only, for benchmarks)
    # HTTPS with this certificate chain and key (PEM files); None: plain HTTP.
    tls: tuple[str, str] | None = None
    host: str = "127.0.0.1"
    port: int = 0
    received: list[Received] = field(default_factory=list)
    count: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(init=False)
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._changed = threading.Condition(self.lock)

    def start(self) -> WebhookReceiver:
        self._server = _Server((self.host, self.port), _Handler)
        self._server.receiver = self
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.port}/hook"

    def record(self, request: Received) -> int:
        """Keeps the request; the status to answer it with."""
        with self._changed:
            status = self.statuses.pop(0) if self.statuses else 200
            self.count += 1
            if self.keep:
                self.received.append(request)
            self._changed.notify_all()
            return status

    def wait_for(self, count: int, timeout: float) -> bool:
        """Whether ``count`` requests came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.count < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    receiver = WebhookReceiver(keep=False, port=args.port).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"listening {receiver.port}", flush=True)
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    receiver.stop()
    print(f"received {receiver.count}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
