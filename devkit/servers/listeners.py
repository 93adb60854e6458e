"""Several ``manage.py listen_mail`` processes on one machine, and a sampler that checks
that no mailbox ever has two active listeners. For integration tests and benchmarks.

Each process writes its status file (``--status-file``): the mailboxes it believes it
listens to, each with its lease token, since when and until when the belief holds (the
last successful renewal plus TTL minus the safety margin). The sampler reads those
files and the lease table many times a second and keeps, per (instance, mailbox,
token), the interval in which that listener was active; two listeners on one mailbox
are a violation if their intervals overlap.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .processes import ManagedProcess


class ListenerProcess(ManagedProcess):
    """One ``listen_mail`` instance with a status file, in its own process group."""

    def __init__(
        self,
        instance_id: str,
        workdir: Path,
        env: dict[str, str],
        prefix: Iterable[str] = (),
    ) -> None:
        self.instance_id = instance_id
        self.status_path = workdir / f"{instance_id}.status.json"
        args = ["listen_mail", "--instance-id", instance_id, "--status-file", str(self.status_path)]
        super().__init__(
            instance_id, args, env, workdir, prefix=prefix, log_name=f"{instance_id}.log"
        )

    def paused(self) -> bool:
        """True while the process is stopped (SIGSTOP), as /proc reports it."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return False
        return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")

    def status(self) -> dict:
        return self.status_written()[1]

    def status_written(self) -> tuple[float, dict]:
        """The status and when it was written (the file's mtime: the kernel's clock, not
        the process's). One open file, so the two belong together even while the
        process replaces the file."""
        try:
            with open(self.status_path, "rb") as f:
                written = os.fstat(f.fileno()).st_mtime
                return written, json.loads(f.read())
        except (FileNotFoundError, json.JSONDecodeError):
            return 0.0, {}

    def listening(self) -> set[int]:
        """The mailboxes this instance reports as actively listened to now."""
        written, status = self.status_written()
        now = time.time()
        return {
            entry["mailbox_id"]
            for entry in status.get("listeners", [])
            if written + entry["valid_for"] > now and not entry["stopping"]
        }


@dataclass
class Interval:
    instance: str
    mailbox_id: int
    token: int
    since: float
    until: float  # the latest moment this listener was seen active


@dataclass
class OverlapSampler:
    """Polls status files and the lease table; finds two listeners on one mailbox."""

    listeners: list[ListenerProcess]
    lease_rows: object  # () -> [(mailbox_id, owner, token)], from a connection of its own
    interval: float = 0.05
    active: dict[tuple[str, int, int], Interval] = field(default_factory=dict)
    lease_tokens: dict[int, list[tuple[str, int]]] = field(default_factory=dict)
    token_regressions: list[str] = field(default_factory=list)
    samples: int = 0
    failed_reads: int = 0  # samples whose lease-table read failed (counted, not fatal)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="sampler")

    def start(self) -> OverlapSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        try:
            rows = self.lease_rows()
        except Exception:  # a busy or restarting server: this sample reads no leases
            self.failed_reads += 1
            rows = []
        for mailbox_id, owner, token in rows:
            history = self.lease_tokens.setdefault(mailbox_id, [])
            if history and token < history[-1][1]:
                self.token_regressions.append(f"mailbox {mailbox_id}: {history[-1]} -> {token}")
            if not history or history[-1] != (owner, token):
                history.append((owner, token))
        for listener in self.listeners:
            # Times come from the file's modification time (the kernel's clock) plus the
            # durations inside: right even for a process whose own clock is skewed.
            written, status = listener.status_written()
            read_at = time.time()
            for entry in status.get("listeners", []):
                since = written - entry["active_for"]
                until = min(read_at, written + entry["valid_for"])
                if until < since:
                    continue
                key = (status["instance"], entry["mailbox_id"], entry["token"])
                seen = self.active.get(key)
                if seen is None:
                    self.active[key] = Interval(*key, since=since, until=until)
                else:
                    seen.since = min(seen.since, since)
                    seen.until = max(seen.until, until)
        self.samples += 1

    def overlaps(self) -> list[tuple[Interval, Interval]]:
        by_mailbox: dict[int, list[Interval]] = {}
        for interval in self.active.values():
            by_mailbox.setdefault(interval.mailbox_id, []).append(interval)
        found = []
        for intervals in by_mailbox.values():
            intervals.sort(key=lambda i: i.since)
            for n, a in enumerate(intervals):
                found.extend((a, b) for b in intervals[n + 1 :] if b.since < a.until)
        return found

    def unknown_tokens(self) -> list[Interval]:
        """Listeners reporting a token the lease table never showed for their owner."""
        seen = {
            (mailbox_id, owner, token)
            for mailbox_id, history in self.lease_tokens.items()
            for owner, token in history
        }
        return [i for i in self.active.values() if (i.mailbox_id, i.instance, i.token) not in seen]
