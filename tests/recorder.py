"""A TCP server of the tests' own that records every byte it receives: stands in for a
server a mailbox must not reach, or for a service that is no IMAP server at all."""

from __future__ import annotations

import socket
import threading

IMAP_GREETING = b"* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] recorder ready"


class RecordingServer:
    """Listens on ``host`` (a free port), sends ``greeting`` (if any) to each connection and, when
    ``imap`` is true, answers just enough IMAP to be sent a LOGIN: CAPABILITY, LOGIN
    (always refused), LOGOUT; anything else is BAD. Otherwise it says nothing more and
    only listens. ``received()`` is everything any client sent, once ``close()`` has
    waited for the connections to end."""

    def __init__(
        self,
        greeting: bytes | None = IMAP_GREETING,
        *,
        imap: bool = True,
        host: str = "127.0.0.1",
    ) -> None:
        self.greeting = greeting
        self.imap = imap
        self.server = socket.create_server((host, 0))
        self.server.settimeout(0.1)  # accept() looks at _stop this often
        self.host = host
        self.port: int = self.server.getsockname()[1]
        self.connections = 0
        self._received = bytearray()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def __enter__(self) -> RecordingServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            try:
                if self.greeting is not None:
                    conn.sendall(self.greeting + b"\r\n")
                pending = b""
                while data := conn.recv(65536):
                    with self._lock:
                        self._received += data
                    pending += data
                    while self.imap and b"\r\n" in pending:
                        line, pending = pending.split(b"\r\n", 1)
                        if not self._answer(conn, line):
                            return
            except OSError:
                return

    def _answer(self, conn: socket.socket, line: bytes) -> bool:
        tag, _, rest = line.partition(b" ")
        command = rest.split(b" ", 1)[0].upper()
        if command == b"CAPABILITY":
            conn.sendall(b"* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n" + tag + b" OK done\r\n")
        elif command == b"LOGIN":
            conn.sendall(tag + b" NO [AUTHENTICATIONFAILED] not here\r\n")
        elif command == b"LOGOUT":
            conn.sendall(b"* BYE\r\n" + tag + b" OK bye\r\n")
            return False
        else:
            conn.sendall(tag + b" BAD unknown command\r\n")
        return True

    def close(self) -> None:
        """Stops listening and waits for every connection to be closed by its client."""
        self._stop.set()
        self._accepting.join(10)
        self.server.close()
        for thread in self._threads:
            thread.join(30)
            assert not thread.is_alive(), "a client kept its connection to the recorder open"

    def received(self) -> bytes:
        with self._lock:
            return bytes(self._received)
