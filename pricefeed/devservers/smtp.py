"""A scriptable SMTP sink for tests and the demo, run as its own process:

    python -m pricefeed.devservers.smtp --port P --maildir DIR [--fail-first N --code 451]
                                        [--reject-rcpt ADDR ...]

Accepted messages go to a Maildir. ``--fail-first N`` answers the first N DATA commands
with ``--code`` (a temporary 451 by default); ``--reject-rcpt`` refuses those recipients
with 550 for ever (mail to other recipients, such as alerts to ADMINS, still goes
through).
"""

from __future__ import annotations

import argparse
import mailbox
import signal
import threading

from aiosmtpd.controller import Controller


class ScriptedHandler:
    def __init__(self, maildir: str, fail_first: int, code: int, reject: set[str]) -> None:
        self.box = mailbox.Maildir(maildir, create=True)
        self.fail_left = fail_first
        self.code = code
        self.reject = {r.lower() for r in reject}
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.reject:
            return f"550 5.1.1 <{address}>: recipient rejected"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            if self.fail_left > 0:
                self.fail_left -= 1
                return f"{self.code} scripted failure, try again later"
            self.box.add(envelope.original_content or envelope.content)
        return "250 Message accepted for delivery"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--maildir", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--code", type=int, default=451)
    parser.add_argument("--reject-rcpt", action="append", default=[])
    args = parser.parse_args()
    handler = ScriptedHandler(args.maildir, args.fail_first, args.code, set(args.reject_rcpt))
    controller = Controller(handler, hostname="127.0.0.1", port=args.port)
    controller.start()
    print(f"smtp sink listening on 127.0.0.1:{args.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
