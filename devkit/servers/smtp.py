"""A scriptable SMTP sink for tests and the demo, run as its own process:

    python -m devkit.servers.smtp --port P --maildir DIR [--fail-first N --code 451]
                                        [--reject-rcpt ADDR ...] [--processes N]

Accepted messages go to a Maildir. ``--fail-first N`` answers the first N DATA commands
with ``--code`` (a temporary 451 by default); ``--reject-rcpt`` refuses those recipients
with 550 for ever (mail to other recipients, such as alerts to ADMINS, still goes
through).

The sink answers 250 once the message is in the Maildir (written to ``tmp/``, renamed
into ``new/``), so a test that heard 250 finds the file. It does not fsync: it is a test
double, and ``mailbox.Maildir.add``'s fsync on the event loop serialised every
connection behind the disk (one fsync at a time, ~1.5 ms each), which made the disk,
not the client, what a benchmark measured. ``--processes N`` runs N servers on the
port (SO_REUSEPORT) for more than one core's worth of SMTP.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from aiosmtpd.smtp import SMTP


class ScriptedHandler:
    def __init__(self, maildir: str, fail_first: int, code: int, reject: set[str]) -> None:
        self.path = Path(maildir)
        for sub in ("tmp", "new", "cur"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        self.names = itertools.count()
        self.fail_left = fail_first
        self.code = code
        self.reject = {r.lower() for r in reject}
        self.lock = threading.Lock()

    def store(self, data: bytes) -> None:
        """Delivers one message to the Maildir: written to tmp/, renamed into new/."""
        name = f"{time.time_ns()}.P{os.getpid()}Q{next(self.names)}.sink"
        tmp = self.path / "tmp" / name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(tmp, self.path / "new" / name)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.reject:
            return f"550 5.1.1 <{address}>: recipient rejected"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            if self.fail_left > 0:
                self.fail_left -= 1
                print(
                    f"refused a message with {self.code} ({self.fail_left} more to refuse)",
                    flush=True,
                )
                return f"{self.code} scripted failure, try again later"
        self.store(envelope.original_content or envelope.content)
        return "250 Message accepted for delivery"


def serve(handler: ScriptedHandler, port: int, *, reuse_port: bool, ready) -> None:
    """Runs the SMTP server on 127.0.0.1:``port`` in this thread until SIGTERM/SIGINT."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = loop.run_until_complete(
        loop.create_server(
            lambda: SMTP(handler, hostname="localhost", loop=loop),
            host="127.0.0.1",
            port=port,
            reuse_port=reuse_port,
        )
    )
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, loop.stop)
    ready()
    try:
        loop.run_forever()
    finally:
        server.close()
        loop.run_until_complete(server.wait_closed())
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--maildir", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--code", type=int, default=451)
    parser.add_argument("--reject-rcpt", action="append", default=[])
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="server processes sharing the port (SO_REUSEPORT: the kernel spreads the "
        "connections over them), for more than one core's worth of SMTP",
    )
    parser.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.processes > 1 and args.fail_first:
        parser.error("--fail-first counts in one process: use it with --processes 1")
    children = []
    for _ in range(args.processes - 1):
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "devkit.servers.smtp",
                "--port",
                str(args.port),
                "--maildir",
                args.maildir,
                "--reuse-port",
                *(f"--reject-rcpt={r}" for r in args.reject_rcpt),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        child.stdout.readline()  # listening
    handler = ScriptedHandler(args.maildir, args.fail_first, args.code, set(args.reject_rcpt))

    def ready() -> None:
        print(f"smtp sink listening on 127.0.0.1:{args.port}", flush=True)

    try:
        serve(handler, args.port, reuse_port=args.processes > 1 or args.reuse_port, ready=ready)
    finally:
        for child in children:
            child.terminate()
        for child in children:
            child.wait(10)


if __name__ == "__main__":
    main()
