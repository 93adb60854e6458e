"""``pricefeed_status``: how the whole installation stands, for a terminal or a script.

Each app reports on its own rows through its selectors (who listens where and the
messages: ``mailboxes.selectors``; imports: ``pricefeed.selectors``; events:
``outbox.selectors``; notifications: ``notifications.selectors``); this module puts
them side by side and decides the exit status. All ages are on the database's clock.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.utils import timezone

from core.backlog import WorkSummary
from fleet import selectors as fleet_selectors
from fleet.selectors import ProcessView
from mailboxes import selectors as mailboxes_selectors
from mailboxes.selectors import InstanceView, LeaseView
from notifications import selectors as notifications_selectors
from outbox import selectors as outbox_selectors
from pricefeed import selectors as pricefeed_selectors

# Exit statuses, for cron and monitoring. They add up: 12 is both problems at once.
# (1 is Django's own for a command that failed, e.g. on an unreachable database, 2 a
# usage error.)
EXIT_OK = 0
EXIT_STUCK = 4  # messages, imports or outbox events stuck (see core.backlog.WorkSummary)
EXIT_UNLISTENED = 8  # an enabled mailbox has no live listen_mail holding its lease
EXIT_BROKERS = 16  # the live processes use different django-q2 brokers

WORK_TITLES = {
    "messages": "inbound messages",
    "imports": "price imports",
    "outbox": "outbox events",
}


@dataclass(frozen=True)
class StatusReport:
    instances: list[InstanceView]
    leases: list[LeaseView]
    messages: WorkSummary
    imports: WorkSummary
    outbox: WorkSummary
    notifications: dict[str, int]
    unlistened: list[str]  # names of enabled mailboxes without a live listener
    # listen_mail, qcluster and dispatch_outbox processes with the broker each uses
    processes: list[ProcessView] = field(default_factory=list)

    @property
    def brokers(self) -> dict[str, list[str]]:
        """Each broker the live processes use, with those processes."""
        found: dict[str, list[str]] = {}
        for process in self.processes:
            if process.live:
                found.setdefault(process.broker, []).append(f"{process.kind} {process.process_id}")
        return found

    def work(self) -> dict[str, WorkSummary]:
        return {"messages": self.messages, "imports": self.imports, "outbox": self.outbox}

    @property
    def exit_code(self) -> int:
        code = EXIT_OK
        if any(summary.stuck for summary in self.work().values()):
            code |= EXIT_STUCK
        if self.unlistened:
            code |= EXIT_UNLISTENED
        if len(self.brokers) > 1:
            code |= EXIT_BROKERS
        return code

    def problems(self) -> list[str]:
        found = [
            f"{WORK_TITLES[name]}: {summary.stuck} stuck ({summary.stuck_running} claimed "
            f"over {summary.claim_timeout:g} s, {summary.stuck_waiting} due over "
            f"{summary.overdue_after:g} s)"
            for name, summary in self.work().items()
            if summary.stuck
        ]
        found += [f"mailbox {name!r} has no live listener" for name in self.unlistened]
        if len(self.brokers) > 1:
            used = "; ".join(f"{b}: {', '.join(p)}" for b, p in self.brokers.items())
            found.append(
                f"live processes use different brokers ({used}): set PRICEFEED_REDIS_URL "
                "the same on every process"
            )
        return found

    def as_dict(self) -> dict:
        return {
            "instances": [
                asdict(i) | {"last_seen": i.last_seen.isoformat()} for i in self.instances
            ],
            "leases": [asdict(lease) for lease in self.leases],
            **{name: summary.as_dict() for name, summary in self.work().items()},
            "notifications": {
                "by_status": self.notifications,
                "failed": self.notifications.get("FAILED", 0),
            },
            "unlistened_mailboxes": self.unlistened,
            "processes": [asdict(p) for p in self.processes],
            "problems": self.problems(),
            "exit_code": self.exit_code,
        }

    def as_text(self) -> str:
        lines = ["listen_mail instances"]
        lines += _table(
            ["instance", "state", "last seen", "leases"],
            [[i.instance_id, i.state, _ago(i.seen_ago), str(i.leases)] for i in self.instances],
        )
        lines += ["", "processes"]
        lines += _table(
            ["process", "kind", "broker", "state"],
            [
                [p.process_id, p.kind, p.broker, "live" if p.live else "gone"]
                for p in self.processes
            ],
        )
        lines += ["", "leases"]
        lines += _table(
            ["mailbox", "owner", "state", "expires in"],
            [
                [lease.mailbox, lease.owner or "—", lease.state, _expires(lease.expires_in)]
                for lease in self.leases
            ],
        )
        for name, summary in self.work().items():
            lines += ["", WORK_TITLES[name], *_work_lines(summary)]
        lines += ["", "notifications", f"  {_counts(self.notifications)}"]
        lines += [f"  failed {self.notifications.get('FAILED', 0)}"]
        problems = self.problems()
        lines += ["", f"problems (exit status {self.exit_code})" if problems else "no problems"]
        lines += [f"  {problem}" for problem in problems]
        return "\n".join(lines)


def status_report() -> StatusReport:
    return StatusReport(
        instances=mailboxes_selectors.instances_overview(),
        leases=mailboxes_selectors.leases_overview(),
        messages=mailboxes_selectors.messages_summary(),
        imports=pricefeed_selectors.imports_summary(),
        outbox=outbox_selectors.events_summary(),
        notifications=notifications_selectors.notifications_by_status(),
        unlistened=mailboxes_selectors.mailboxes_unlistened(),
        processes=fleet_selectors.processes_overview(),
    )


def _work_lines(summary: WorkSummary) -> list[str]:
    oldest = (
        "none due"
        if summary.oldest_due_at is None or summary.oldest_due_age is None
        else f"oldest due {_ago(summary.oldest_due_age)} "
        f"({timezone.localtime(summary.oldest_due_at):%Y-%m-%d %H:%M:%S %Z})"
    )
    return [
        f"  {_counts(summary.by_status)}",
        f"  backlog {summary.backlog}, {summary.due} due, {oldest}",
        f"  stuck {summary.stuck} ({summary.stuck_running} claimed over "
        f"{summary.claim_timeout:g} s, {summary.stuck_waiting} due over "
        f"{summary.overdue_after:g} s), failed {summary.failed}",
    ]


def _counts(by_status: dict[str, int]) -> str:
    return ", ".join(f"{status} {n}" for status, n in by_status.items())


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s ago"


def _expires(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f} s" if seconds > 0 else f"expired {-seconds:.0f} s ago"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return ["  (none)"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
