"""The one place a failed claimed attempt is retried with backoff or failed for good.

Inbound messages (PROCESSING → RETRYABLE | FAILED) and price imports (RUNNING →
PENDING | FAILED) share it: the same policy, the same conditional UPDATEs on the
claim, the same alert.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import models, transaction
from django.db.models.functions import Now

from pricefeed.alerts import alert
from pricefeed.dbtime import db_now_plus
from pricefeed.retry import processing_retry_policy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimedWork:
    """How one kind of claimed row moves after a failed attempt."""

    model: type[models.Model]
    running: str
    retry: str
    failed: str
    what: str  # "message", "price import": for logs and alerts
    touch: tuple[str, ...] = ()  # timestamp fields set to now() on every move

    def retry_or_fail(
        self,
        *,
        pk: int,
        worker: str | None,
        error: BaseException | str,
        describe: Callable[[], str] = lambda: "",
        on_failed: Callable[[], None] | None = None,
    ) -> str | None:
        """Moves a claimed row to the retry state with backoff, or past the attempt limit
        to the failed state with an ERROR log and a mail to ADMINS. Returns the new
        state, or None when the row is no longer ours (someone else moved it)."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        attempts = self.model.objects.filter(pk=pk).values_list("attempts", flat=True).first()
        if attempts is None:
            return None
        claim = {"claimed_by": worker} if worker else {}
        ours = self.model.objects.filter(pk=pk, status=self.running, **claim)
        common = {
            "last_error": text[:5000],
            "claimed_by": "",
            "claimed_at": None,
            **{field: Now() for field in self.touch},
        }
        policy = processing_retry_policy()
        if policy.exhausted(attempts):
            with transaction.atomic():
                moved = ours.update(status=self.failed, finished_at=Now(), **common)
                if moved:
                    if on_failed is not None:
                        on_failed()
                    label = describe()
                    alert(
                        f"{self.what} failed",
                        f"{self.what.capitalize()} #{pk}{f' ({label})' if label else ''} failed "
                        f"after {attempts} attempts: {text}",
                        object_id=pk,
                    )
            return self.failed if moved else None
        delay = policy.backoff.delay(attempts)
        moved = ours.update(status=self.retry, next_attempt_at=db_now_plus(delay), **common)
        if moved:
            logger.warning(
                "%s will be retried id=%s attempt=%s in=%.0fs: %s",
                self.what,
                pk,
                attempts,
                delay,
                text,
                extra={"action": "retry", "object_id": pk},
            )
        return self.retry if moved else None
