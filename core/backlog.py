"""What claimed work looks like now: rows by status, the backlog, the stuck and failed
rows and the oldest due one, for operators and monitoring (``pricefeed_status``).

Each app asks about its own rows from its selectors, with its ``ClaimedWork`` (the
states) and its own timeouts; ages are measured on the database's clock (core.dbtime),
like the claims and sweeps they describe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from django.db.models import Count, DurationField, Expression, ExpressionWrapper, F, Max, Min, Q
from django.db.models.functions import Now

from core.claims import ClaimedWork
from core.dbtime import db_now_minus


@dataclass(frozen=True)
class WorkSummary:
    """One kind of claimed work (messages, imports, outbox events) at one moment."""

    by_status: dict[str, int]  # every status of the model, 0 where no row has it
    backlog: int  # rows waiting for a worker, due or backing off
    due: int  # of those, the ones due now
    stuck_running: int  # claimed for longer than claim_timeout (the worker died or hangs)
    stuck_waiting: int  # due for longer than overdue_after and still not claimed
    failed: int
    oldest_due_at: datetime | None  # when the longest-waiting due row became due
    oldest_due_age: float | None  # seconds since then
    claim_timeout: float
    overdue_after: float

    @property
    def stuck(self) -> int:
        return self.stuck_running + self.stuck_waiting

    def as_dict(self) -> dict:
        data = asdict(self)
        data["stuck"] = self.stuck
        if self.oldest_due_at is not None:
            data["oldest_due_at"] = self.oldest_due_at.isoformat()
        return data


def work_summary(
    work: ClaimedWork, *, claim_timeout: float, overdue_after: float, due_since: Expression | F
) -> WorkSummary:
    """Counts ``work``'s rows: by status (one GROUP BY), then the running and waiting ones
    (one aggregate over those states only, so finished rows cost nothing but the
    GROUP BY). ``due_since`` is when a waiting row became due (its ``next_attempt_at``,
    or when it arrived if it has none)."""
    manager = work.model._default_manager
    choices = getattr(work.model._meta.get_field("status"), "choices", None) or ()
    found = dict(manager.order_by().values_list("status").annotate(n=Count("pk")))
    by_status = {str(value): found.pop(value, 0) for value, _label in choices}
    by_status.update({str(status): n for status, n in found.items()})

    waiting = Q(status__in=work.waiting)
    due = waiting & Q(due_since__lte=Now())
    active = manager.filter(status__in=[work.running, *work.waiting]).annotate(
        due_since=due_since,
        due_for=ExpressionWrapper(Now() - due_since, DurationField()),
    )
    found = active.aggregate(
        backlog=Count("pk", filter=waiting),
        due=Count("pk", filter=due),
        stuck_running=Count("pk", filter=work.claim_expired(claim_timeout=claim_timeout)),
        stuck_waiting=Count("pk", filter=waiting & Q(due_since__lt=db_now_minus(overdue_after))),
        oldest_due_at=Min("due_since", filter=due),
        oldest_due_age=Max("due_for", filter=due),
    )
    age = found["oldest_due_age"]
    return WorkSummary(
        by_status=by_status,
        backlog=found["backlog"],
        due=found["due"],
        stuck_running=found["stuck_running"],
        stuck_waiting=found["stuck_waiting"],
        failed=by_status.get(str(work.failed), 0),
        oldest_due_at=found["oldest_due_at"],
        oldest_due_age=None if age is None else round(max(0.0, age.total_seconds()), 3),
        claim_timeout=claim_timeout,
        overdue_after=overdue_after,
    )
