"""The one mechanism for claimed work: claim, finish, retry or fail, requeue, sweep.

Inbound messages (RECEIVED → PROCESSING → DONE … | RETRYABLE | FAILED), price imports
(PENDING → RUNNING → SUCCEEDED … | FAILED) and outbox events (NEW → PROCESSING → SENT |
FAILED) share it: the same conditional UPDATEs on the claim, the same retry policy, the
same alert, the same sweep of expired claims and lost queue entries.

Not every failed attempt deserves a retry. A permanent error (``PERMANENT_ERRORS``: a
value the database refuses, a recursion or memory limit reached) fails the row at once:
running it again would only fail again. A run that ends with its worker process (killed,
crashed in native code, out of memory, stopped by the task timeout) counts a *crash*
(``crashed``, found by ``reap_orphans``): retried after a short backoff, failed at the
crash limit, so one hostile input never kills worker after worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import DataError, models, transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils.translation import ngettext

from core import texts
from core.alerts import alert
from core.dbtime import db_now_minus, db_now_plus, due_and_not_queued
from core.exceptions import ClaimLost
from core.retry import RetryPolicy, crash_limit, processing_retry_policy
from core.texts import Text, gettext_noop

logger = logging.getLogger(__name__)

SWEEP_BATCH = 1000

# Errors no retry can mend: the same input meets them again. A DataError is a value the
# database refuses (a COPY of a too-long SKU); a RecursionError or a MemoryError (under
# the workers' PRICEFEED_WORKER_MEMORY_LIMIT) is an input too deep or too large to read.
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (DataError, RecursionError, MemoryError)


# The reasons stored on a failed or retried row (in English, shown translated: core.texts).
OUT_OF_MEMORY = gettext_noop(
    "MemoryError: out of memory while running it (over the worker's memory limit, "
    "PRICEFEED_WORKER_MEMORY_LIMIT); a permanent error, not retried"
)
PERMANENT = gettext_noop("%(error)s: %(detail)s (a permanent error, not retried)")
NO_DETAIL = gettext_noop("no detail")
CRASHED_ONCE = gettext_noop(
    "the worker process died while running it once (a reader crashed or memory ran out)"
)
CRASHED_TIMES = gettext_noop(
    "the worker process died while running it %(count)s times (a reader crashed or memory ran out)"
)
FAILED_WITH_WORKER = gettext_noop(
    "failed after %(attempts)s attempts, the last one ending with its worker"
)
LAST_DETAIL = gettext_noop("%(reason)s; last: %(detail)s")
CRASH_OF_LIMIT = gettext_noop("crash %(crashes)s of at most %(limit)s: %(detail)s")
CLAIM_EXPIRED = gettext_noop("claim by %(worker)s expired (worker died or timed out)")
STOPPED_BY = gettext_noop("stopped by %(signal)s")
WORKER_DIED = gettext_noop("the worker process %(worker)s died while running it")
# An operator's action (the admin's): stored in English with the user's name.
MARKED_FAILED_BY = gettext_noop("marked failed by %(user)s")


def _crashed_times(count: int) -> str:
    return ngettext(
        "the worker process died while running it %(count)s times (a reader crashed or memory "
        "ran out)",
        "the worker process died while running it %(count)s times (a reader crashed or memory "
        "ran out)",
        count,
    )


texts.register(plurals={CRASHED_TIMES: ("count", _crashed_times)})


def permanent_reason(error: BaseException) -> str:
    """The reason a row failed for good, for ``last_error`` and the alert."""
    if isinstance(error, MemoryError):
        return OUT_OF_MEMORY
    detail = texts.text_of(error) if str(error).strip() else NO_DETAIL
    return Text(PERMANENT, error=type(error).__name__, detail=detail)


def crash_reason(crashes: int) -> str:
    """The reason a row failed after its worker process died ``crashes`` times."""
    return CRASHED_ONCE if crashes == 1 else Text(CRASHED_TIMES, count=crashes)


@dataclass(frozen=True)
class SweepResult:
    expired_claims: int
    requeued: int


def _nothing(pk: Any) -> str:
    return ""


@dataclass(frozen=True)
class ClaimedWork:
    """How one kind of claimed row moves after a failed attempt, and how it is swept."""

    model: type[models.Model]
    running: str
    retry: str
    failed: str
    waiting: tuple[str, ...]  # states that wait for a worker
    queued_field: str | None  # when the row was last handed to the task queue, if it is
    what: str  # "message", "price import": for logs and alerts
    touch: tuple[str, ...] = ()  # timestamp fields set to now() on every move
    describe: Callable[[Any], str] = _nothing  # a few words for the alert
    on_failed: Callable[[Any], None] | None = None  # inside the failing transaction
    policy: Callable[[], RetryPolicy] = processing_retry_policy
    id_key: str = "object_id"  # the log key of the row's id: message_id, import_id, event_id
    permanent: tuple[type[BaseException], ...] = PERMANENT_ERRORS  # → failed at once
    # The field counting the runs that ended with their worker process (``crashed``);
    # None for rows no worker process claims (they expire by the claim timeout only).
    crashes_field: str | None = None
    # Crashes a row may cost before it fails; None: PRICEFEED_CRASH_MAX_ATTEMPTS.
    max_crashes: int | None = None

    def claim(self, *, pk: object, worker: str, **fields: object) -> bool:
        """A waiting row that is due → running, claimed by ``worker`` (attempts + 1);
        False when it is not ours to run (gone, done, claimed, or backing off)."""
        return bool(
            self.model._default_manager.filter(pk=pk, status__in=self.waiting)
            .exclude(next_attempt_at__gt=Now())
            .update(
                status=self.running,
                claimed_by=worker,
                claimed_at=Now(),
                attempts=F("attempts") + 1,
                **{field: Now() for field in self.touch},
                **fields,
            )
        )

    def run(self, *, pk: Any, worker: str, work: Callable[[], str], **claim: object) -> str | None:
        """Claims the row (see ``claim``; ``claim`` fields are stored with it), then runs
        ``work``, which finishes it and returns its final state. Returns that state;
        None when the row was not ours to run or the claim was lost meanwhile; on a
        ``permanent`` error the row fails at once (``fail``), on any other error it is
        retried or failed (``retry_or_fail``), and its new state is returned. Stopped by
        SystemExit or KeyboardInterrupt (django-q2's task timeout is a SystemExit), the
        run counts as a crash (``crashed``) before the exception goes on. A task entry
        point: every way out leaves the row in a visible state."""
        if not self.claim(pk=pk, worker=worker, **claim):
            logger.debug(
                "%s not claimable %s=%s",
                self.what,
                self.id_key,
                pk,
                extra={"action": "not_claimable", self.id_key: pk},
            )
            return None
        try:
            return work()
        except ClaimLost:
            logger.warning(
                "%s claim lost %s=%s",
                self.what,
                self.id_key,
                pk,
                extra={"action": "claim_lost", self.id_key: pk},
            )
            return None
        except self.permanent as exc:
            # Logged with its traceback here; fail() raises the alert at ERROR.
            logger.warning(
                "%s failed for good %s=%s",
                self.what,
                self.id_key,
                pk,
                exc_info=True,
                extra={"action": "attempt_failed_permanently", self.id_key: pk},
            )
            failed = self.fail(pk=pk, worker=worker, reason=permanent_reason(exc))
            return self.failed if failed else None
        except Exception as exc:
            logger.exception(
                "%s failed %s=%s",
                self.what,
                self.id_key,
                pk,
                extra={"action": "attempt_failed", self.id_key: pk},
            )
            return self.retry_or_fail(pk=pk, worker=worker, error=exc)
        except BaseException as exc:
            # The process is being stopped under the run: record it now rather than leave
            # the row to the reaping of dead workers (best effort: the database may be
            # what was interrupted).
            if self.crashes_field is not None:
                try:
                    self.crashed(
                        pk=pk, worker=worker, detail=Text(STOPPED_BY, signal=_stop_text(exc))
                    )
                except Exception:
                    logger.exception(
                        "%s: recording the stopped run failed %s=%s", self.what, self.id_key, pk
                    )
            raise

    def finish(self, *, pk: object, worker: str, status: str, **fields: object) -> None:
        """Running and claimed by ``worker`` → ``status`` (a final state), the claim
        cleared; ``fields`` are stored with it (``last_error`` is cleared unless given).
        Raises ClaimLost when the row is no longer ours."""
        done = self.model._default_manager.filter(
            pk=pk, status=self.running, claimed_by=worker
        ).update(
            status=status,
            claimed_by="",
            claimed_at=None,
            next_attempt_at=None,
            finished_at=Now(),
            **{field: Now() for field in self.touch},
            **(texts.stored("last_error", "") | fields),
        )
        if not done:
            raise ClaimLost(f"{self.what} {pk} is no longer claimed by {worker}")

    def fail(self, *, pk: object, worker: str, reason: str) -> bool:
        """A failure no retry can mend: running → failed at once, with an alert. False
        when the row is no longer ours."""
        ours = self.model._default_manager.filter(pk=pk, status=self.running, claimed_by=worker)
        return self._to_failed(
            ours, pk, reason=reason, alert_text=f"{self.what.capitalize()} {pk}: {reason}"
        )

    def _to_failed(
        self, ours: models.QuerySet, pk: Any, *, reason: str, alert_text: str, **fields: object
    ) -> bool:
        """``ours`` (the row, if still claimed as the caller knows it) → failed, the claim
        cleared, ``reason`` kept; in the same transaction ``on_failed`` and the alert.
        False when the row is no longer ours."""
        with transaction.atomic():
            moved = ours.update(
                status=self.failed,
                **texts.stored("last_error", reason),
                finished_at=Now(),
                claimed_by="",
                claimed_at=None,
                **{field: Now() for field in self.touch},
                **fields,
            )
            if moved:
                if self.on_failed is not None:
                    self.on_failed(pk)
                alert(f"{self.what} failed", alert_text, **{self.id_key: pk})
        return bool(moved)

    def _to_retry(
        self, ours: models.QuerySet, *, delay: float, reason: str, **fields: object
    ) -> bool:
        """``ours`` → the retry state, due in ``delay`` seconds, the claim cleared and
        ``reason`` kept. False when the row is no longer ours."""
        return bool(
            ours.update(
                status=self.retry,
                next_attempt_at=db_now_plus(delay),
                **texts.stored("last_error", reason),
                claimed_by="",
                claimed_at=None,
                **{field: Now() for field in self.touch},
                **fields,
            )
        )

    def _label(self, pk: Any) -> str:
        """``Price import #12 (a few words)`` for an alert."""
        label = self.describe(pk)
        return f"{self.what.capitalize()} #{pk}{f' ({label})' if label else ''}"

    def requeue(
        self,
        *,
        pks: Iterable[object],
        from_states: Iterable[str],
        enqueue: Callable[[list], None] | None = None,
        **conditions: object,
    ) -> int:
        """Operator action: rows in ``from_states`` (and matching ``conditions``) start
        over as waiting rows, attempts reset and due now; ``enqueue`` gets their ids
        once the caller's transaction commits. Returns how many moved.

        The state condition is part of the UPDATE: a row a worker claimed in between
        stays with that worker."""
        candidates = self.model._default_manager.filter(
            pk__in=list(pks), status__in=list(from_states), **conditions
        )
        ids = list(candidates.values_list("pk", flat=True))
        nullable = self.model._meta.get_field("next_attempt_at").null
        moved = candidates.filter(pk__in=ids).update(
            status=self.waiting[0],
            attempts=0,
            next_attempt_at=None if nullable else Now(),
            **texts.stored("last_error", ""),
            claimed_by="",
            claimed_at=None,
            finished_at=None,
            **({self.crashes_field: 0} if self.crashes_field else {}),
            **{field: Now() for field in {*self.touch, *filter(None, [self.queued_field])}},
        )
        if enqueue is not None and ids:
            transaction.on_commit(lambda: enqueue(ids))
        return moved

    def retry_or_fail(
        self, *, pk: Any, worker: str | None, error: BaseException | str
    ) -> str | None:
        """Moves a claimed row to the retry state with backoff, or past the attempt limit
        to the failed state with an ERROR log and a mail to ADMINS. Returns the new
        state, or None when the row is no longer ours (someone else moved it)."""
        text = error if isinstance(error, str) else texts.error_text(error)
        attempts = (
            self.model._default_manager.filter(pk=pk).values_list("attempts", flat=True).first()
        )
        if attempts is None:
            return None
        claim = {"claimed_by": worker} if worker else {}
        ours = self.model._default_manager.filter(pk=pk, status=self.running, **claim)
        policy = self.policy()
        if policy.exhausted(attempts):
            failed = self._to_failed(
                ours,
                pk,
                reason=text,
                alert_text=f"{self._label(pk)} failed after {attempts} attempts: {text}",
            )
            return self.failed if failed else None
        delay = policy.backoff.delay(attempts)
        moved = self._to_retry(ours, delay=delay, reason=text)
        if moved:
            logger.warning(
                "%s will be retried %s=%s attempt=%s in=%.0fs: %s",
                self.what,
                self.id_key,
                pk,
                attempts,
                delay,
                text,
                extra={"action": "retry", self.id_key: pk},
            )
        return self.retry if moved else None

    def claim_expired(self, *, claim_timeout: float) -> Q:
        """Rows claimed longer than ``claim_timeout`` ago: the worker died or hangs (the
        sweep retries them; ``core.backlog`` counts them as stuck)."""
        return Q(status=self.running, claimed_at__lt=db_now_minus(claim_timeout))

    def expire_claims(self, *, claim_timeout: float) -> int:
        """Retries claims older than ``claim_timeout``: the worker died or hung."""
        expired = list(
            self.model._default_manager.filter(
                self.claim_expired(claim_timeout=claim_timeout)
            ).values_list("pk", "claimed_by")
        )
        for pk, worker in expired:
            self.retry_or_fail(
                pk=pk,
                worker=worker,
                error=Text(CLAIM_EXPIRED, worker=str(worker)),
            )
        return len(expired)

    def crashed(self, *, pk: Any, worker: str, detail: str) -> str | None:
        """A run claimed by ``worker`` ended with its process (found dead by
        ``reap_orphans``, or stopped under the run): one more crash. Below the crash
        limit (``max_crashes``, else ``PRICEFEED_CRASH_MAX_ATTEMPTS``) the row is retried
        after the first backoff step; at it, or past the attempt limit, it fails with an
        alert. Returns the new state, or None when the row is no longer running under
        that claim.

        A compare-and-set on the claim and the crash count: two reapers of one dead
        worker (the sweep and a new worker's spawn) count its crash once."""
        assert self.crashes_field, f"{self.what} rows do not count crashes"
        claimed = self.model._default_manager.filter(pk=pk, status=self.running, claimed_by=worker)
        row = claimed.values_list("attempts", self.crashes_field).first()
        if row is None:
            return None
        attempts, before = row
        crashes = before + 1
        ours = claimed.filter(**{self.crashes_field: before})
        counted = {self.crashes_field: crashes}
        policy = self.policy()
        limit = self.max_crashes or crash_limit()
        if crashes >= limit or policy.exhausted(attempts):
            reason = (
                crash_reason(crashes)
                if crashes >= limit
                else Text(FAILED_WITH_WORKER, attempts=attempts)
            )
            reason = Text(LAST_DETAIL, reason=reason, detail=detail)
            failed = self._to_failed(
                ours, pk, reason=reason, alert_text=f"{self._label(pk)}: {reason}", **counted
            )
            return self.failed if failed else None
        delay = policy.backoff.delay(1)  # the shortest step: a crash is not load
        moved = self._to_retry(
            ours,
            delay=delay,
            reason=Text(CRASH_OF_LIMIT, crashes=crashes, limit=limit, detail=detail),
            **counted,
        )
        if moved:
            logger.warning(
                "%s will be retried after its worker died %s=%s crash=%s in=%.0fs: %s",
                self.what,
                self.id_key,
                pk,
                crashes,
                delay,
                detail,
                extra={"action": "crash_retry", self.id_key: pk},
            )
        return self.retry if moved else None

    def reap_orphans(self, *, host: str, is_dead: Callable[[int], bool]) -> int:
        """Running rows claimed by a worker process of ``host`` (``host:pid``) for which
        ``is_dead(pid)`` holds: each counts a crash (``crashed``). Returns how many moved.

        Only ``host`` can tell whether one of its processes is gone, so each host reaps
        its own; a claim whose process cannot be judged is left to the claim timeout."""
        if self.crashes_field is None:
            return 0
        running = self.model._default_manager.filter(
            status=self.running, claimed_by__startswith=f"{host}:"
        ).values_list("pk", "claimed_by")
        reaped = 0
        for pk, worker in list(running):
            claim_host, _, pid = worker.rpartition(":")
            if claim_host != host or not pid.isdigit() or not is_dead(int(pid)):
                continue
            detail = Text(WORKER_DIED, worker=str(worker))
            if self.crashed(pk=pk, worker=worker, detail=detail) is not None:
                reaped += 1
        return reaped

    def sweep(
        self,
        *,
        claim_timeout: float,
        requeue_after: float,
        enqueue: Callable[[Iterable[int]], None],
    ) -> SweepResult:
        """Expires dead claims and hands due rows back to the queue when they were never
        queued since becoming due, or not for ``requeue_after`` seconds (a lost task).

        Safe to run from every instance at once: each step is a conditional update and
        a duplicate enqueue is harmless (the claim decides).
        """
        assert self.queued_field, f"{self.what} rows are not handed to a queue"
        expired = self.expire_claims(claim_timeout=claim_timeout)
        waiting = self.model._default_manager.filter(status__in=self.waiting)
        due = list(
            waiting.filter(due_and_not_queued(requeue_after, self.queued_field)).values_list(
                "pk", flat=True
            )[:SWEEP_BATCH]
        )
        # Marked as queued first, so the next sweep leaves them to the worker.
        waiting.filter(pk__in=due).update(**{self.queued_field: Now()})
        enqueue(due)
        if expired or due:
            logger.info("sweep %s expired_claims=%s requeued=%s", self.what, expired, len(due))
        return SweepResult(expired_claims=expired, requeued=len(due))


def _stop_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
