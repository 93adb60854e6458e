"""The status file of a ``listen_mail`` instance, for operators and probes.

What the instance believes it listens to: each mailbox with its token and until when the
belief holds, as wall-clock times and relative to the moment of writing (so that a
reader taking that moment from the file's modification time needs no trust in this
process's clock).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable

from .listener import MailboxListener


class StatusFile:
    """Rewrites ``path`` atomically when what it would say changed, or at least every
    ``period`` seconds; a path of "" writes nothing."""

    def __init__(self, path: str, *, instance_id: str, period: float) -> None:
        self.path = path
        self.instance_id = instance_id
        self.period = period
        self._body = ""
        self._written = 0.0

    def write(
        self, listeners: Iterable[MailboxListener], *, stopping: bool, force: bool = False
    ) -> None:
        if not self.path:
            return
        now_wall, now_mono = time.time(), time.monotonic()
        entries = [
            {
                "mailbox_id": lst.mailbox_id,
                "mailbox": lst.mailbox_name,
                "token": lst.lease.token,
                "since": round(lst.since, 3),
                "valid_until": round(now_wall + min(lst.valid_until - now_mono, 1e6), 3),
                "active_for": round(now_mono - lst.since_monotonic, 3),
                "valid_for": round(min(lst.valid_until - now_mono, 1e6), 3),
                "stopping": lst.stopping.is_set(),
            }
            for lst in listeners
            # Started (alive) or about to start: reported before the thread can act.
            if lst.is_alive() or not lst.ident
        ]
        body = json.dumps(
            {
                "instance": self.instance_id,
                "pid": os.getpid(),
                "stopping": stopping,
                "listeners": sorted(entries, key=lambda x: x["mailbox_id"]),
            },
            sort_keys=True,
        )
        if not force and body == self._body and now_mono - self._written < self.period:
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, self.path)
        self._body, self._written = body, now_mono
