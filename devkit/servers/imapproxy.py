"""An IMAP proxy that makes a server say less, like the servers pricefeed meets that do.

Put between a client and a well-behaved server (Dovecot), :class:`QuietImapProxy`
forwards everything except what it was told to hide:

- ``hide_idle_news``: every untagged response sent while the client is in IDLE (from
  its ``IDLE`` command to the server's tagged answer after ``DONE``): ``* n EXISTS``,
  ``* n RECENT``, and the rest (counted as ``"other"``), like a server whose IDLE
  announces nothing (Cyrus without idled, Courier without FAM, between their
  once-a-minute polls). The rest matters: Dovecot says ``* OK Still here`` every
  ``imap_idle_notify_interval`` (2 minutes), the first time at a moment spread by a hash
  of the user, so anywhere from a second to two minutes into an IDLE; a client woken by
  it catches up and finds the mail the IDLE did not announce;
- ``hide_uidnext``: the ``* OK [UIDNEXT n]`` line of SELECT and EXAMINE, which Courier
  never sends;
- ``refuse_status``: the client's ``STATUS`` commands reach the server renamed, so the
  server answers ``BAD`` (a server that cannot tell a folder's status).

It reads just enough IMAP to do so without corrupting the stream: each direction is cut
into lines at CRLF, and a line ending in a literal's announcement (``{n}``, ``{n+}``,
``{n-}``, ``~{n}``) is followed by n bytes that are passed on unread, whatever they hold
(a message body may well contain ``* 1 EXISTS``). Literals are forwarded as they
arrive: the client's synchronising literal waits for the server's ``+``, which must get
through. Plain TCP only (the throwaway servers speak no TLS to it).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from devkit.servers import LOCALHOST

__all__ = ["ImapFilter", "ImapFramer", "Piece", "QuietImapProxy"]

_LITERAL = re.compile(rb"\{(\d+)[+-]?\}\r\n\Z")
_NEWS = re.compile(rb"\* \d+ (EXISTS|RECENT)\r\n\Z", re.IGNORECASE)
_UIDNEXT = re.compile(rb"\* OK \[UIDNEXT \d+\]", re.IGNORECASE)
_COMMAND = re.compile(rb"([^ \r\n]+) ([A-Za-z]+)")
# What a filter keeps of the conversation: lines, and characters of each line.
TRANSCRIPT_LINES = 200
TRANSCRIPT_WIDTH = 120


@dataclass(frozen=True)
class Piece:
    """A part of one direction of an IMAP stream: a line with its CRLF, or literal
    bytes. ``starts`` is true for the first line of a command or response."""

    data: bytes
    starts: bool = False
    literal: bool = False


class ImapFramer:
    """Cuts one direction of an IMAP stream into pieces, fed in chunks of any size.

    A command or response is a line, and when that line ends in a literal's
    announcement, the literal's bytes and the line that continues after them, and so on
    until a line without one. Literal bytes are handed out as they come, never held.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._literal_left = 0
        self._in_message = False

    def feed(self, data: bytes) -> list[Piece]:
        self._buffer += data
        pieces: list[Piece] = []
        while self._buffer:
            if self._literal_left:
                chunk = bytes(self._buffer[: self._literal_left])
                del self._buffer[: len(chunk)]
                self._literal_left -= len(chunk)
                pieces.append(Piece(chunk, literal=True))
                continue
            end = self._buffer.find(b"\r\n")
            if end < 0:
                break
            line = bytes(self._buffer[: end + 2])
            del self._buffer[: end + 2]
            pieces.append(Piece(line, starts=not self._in_message))
            literal = _LITERAL.search(line)
            if literal:
                self._literal_left = int(literal[1])
                self._in_message = True
            else:
                self._in_message = False
        return pieces


class ImapFilter:
    """What one client connection's proxy forwards: ``from_client`` and
    ``from_server`` take the bytes read from either side (each called by one thread)
    and return the bytes to send on. Counts what it hid in ``hidden``."""

    def __init__(
        self,
        *,
        hide_idle_news: bool = False,
        hide_uidnext: bool = False,
        refuse_status: bool = False,
    ) -> None:
        self.hide_idle_news = hide_idle_news
        self.hide_uidnext = hide_uidnext
        self.refuse_status = refuse_status
        self.hidden: Counter[str] = Counter()
        self.idles = 0  # IDLE commands the client sent
        self._client = ImapFramer()
        self._server = ImapFramer()
        self._idle_tag: bytes | None = None
        self._dropping = False  # the server's response being read is hidden
        self._lock = threading.Lock()
        # The first line of each command and response, as passed or hidden, for a
        # failing test to show what was said (the last TRANSCRIPT_LINES of them).
        self.transcript: deque[str] = deque(maxlen=TRANSCRIPT_LINES)

    def _note(self, direction: str, line: bytes, hidden: bool = False) -> None:
        text = line[:TRANSCRIPT_WIDTH].decode("ascii", "replace").rstrip("\r\n")
        mark = " (hidden)" if hidden else ""
        self.transcript.append(f"{time.strftime('%H:%M:%S')} {direction} {text}{mark}")

    @property
    def idling(self) -> bool:
        """True from the client's IDLE command until the server's tagged answer to it."""
        return self._idle_tag is not None

    def from_client(self, data: bytes) -> bytes:
        out = bytearray()
        for piece in self._client.feed(data):
            chunk = piece.data
            if piece.starts:
                self._note("C:", chunk)
            if piece.starts and (command := _COMMAND.match(chunk)):
                tag, name = command[1], command[2].upper()
                if name == b"IDLE":
                    # Before the command is passed on: the server's first answer to it
                    # must already find the client idling.
                    with self._lock:
                        self._idle_tag = tag
                        self.idles += 1
                elif name == b"STATUS" and self.refuse_status:
                    chunk = tag + b" XSTATUS-REFUSED-BY-PROXY" + chunk[command.end() :]
                    with self._lock:
                        self.hidden["status"] += 1
            out += chunk
        return bytes(out)

    def from_server(self, data: bytes) -> bytes:
        out = bytearray()
        for piece in self._server.feed(data):
            if piece.starts:
                self._dropping = self._hides(piece.data)
                self._note("S:", piece.data, hidden=self._dropping)
            if not self._dropping:
                out += piece.data
        return bytes(out)

    def _hides(self, line: bytes) -> bool:
        with self._lock:
            if self._idle_tag is not None and line.startswith(self._idle_tag + b" "):
                self._idle_tag = None  # IDLE is over
                return False
            kind = None
            if self.hide_idle_news and self._idle_tag is not None and line.startswith(b"* "):
                news = _NEWS.match(line)
                kind = news[1].decode().lower() if news else "other"
            elif self.hide_uidnext and _UIDNEXT.match(line):
                kind = "uidnext"
            if kind is None:
                return False
            self.hidden[kind] += 1
            return True


class QuietImapProxy:
    """Listens on a free port of 127.0.0.1 and forwards each connection to ``target``
    through its own :class:`ImapFilter` (options as there). Use it as a context manager
    or call ``close()``."""

    def __init__(
        self,
        target: tuple[str, int],
        *,
        hide_idle_news: bool = False,
        hide_uidnext: bool = False,
        refuse_status: bool = False,
    ) -> None:
        self.target = target
        self.options = {
            "hide_idle_news": hide_idle_news,
            "hide_uidnext": hide_uidnext,
            "refuse_status": refuse_status,
        }
        self.filters: list[ImapFilter] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._server = socket.create_server((LOCALHOST, 0))
        self.host = LOCALHOST
        self.port: int = self._server.getsockname()[1]
        threading.Thread(target=self._accept, name="imap-proxy", daemon=True).start()

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self.filters)

    @property
    def idling(self) -> bool:
        """True while some client is in IDLE."""
        with self._lock:
            return any(f.idling for f in self.filters)

    @property
    def idles(self) -> int:
        """IDLE commands sent by all clients so far."""
        with self._lock:
            return sum(f.idles for f in self.filters)

    def transcript(self) -> str:
        """What was said on every connection (the last lines of each), for a failing
        test's message."""
        with self._lock:
            return "\n\n".join(
                f"connection {n}:\n" + "\n".join(f.transcript)
                for n, f in enumerate(self.filters, 1)
            )

    def hidden(self, kind: str) -> int:
        """How many times something of ``kind`` was hidden on all connections:
        ``"exists"``, ``"recent"`` and ``"other"`` (in IDLE), ``"uidnext"`` or
        ``"status"``."""
        with self._lock:
            return sum(f.hidden[kind] for f in self.filters)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            imap_filter = ImapFilter(**self.options)
            with self._lock:
                self.filters.append(imap_filter)
                self._sockets += [client, upstream]
            for source, sink, forward in (
                (client, upstream, imap_filter.from_client),
                (upstream, client, imap_filter.from_server),
            ):
                threading.Thread(
                    target=pump, args=(source, sink, forward), name="imap-proxy", daemon=True
                ).start()

    def close(self) -> None:
        self._server.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            shut(s)
            s.close()

    def __enter__(self) -> QuietImapProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def pump(source: socket.socket, sink: socket.socket, forward: Callable[[bytes], bytes]) -> None:
    """Copies ``source`` to ``sink`` through ``forward`` until either end closes; then
    shuts both down (the other direction's pump ends too)."""
    try:
        while data := source.recv(65536):
            if out := forward(data):
                sink.sendall(out)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            shut(s)


def shut(s: socket.socket) -> None:
    """Shuts a socket down both ways, whatever state it is in."""
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
