"""The processing state machine of inbound messages, and the queue that drives it.

InboundMessage: RECEIVED → PROCESSING → DONE | IGNORED | RETRYABLE | FAILED | REJECTED.
Every transition is a conditional UPDATE on the allowed source states (core.claims);
zero rows means somebody else moved the message and raises ClaimLost.

What processing a message means is not this app's business: the app that reads
messages (pricefeed) names its django-q2 task with ``set_message_task`` at startup, and
this module enqueues that task for every recorded, requeued or swept message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now

from core.claims import ClaimedWork, SweepResult
from core.texts import stored

from .models import InboundMessage

logger = logging.getLogger(__name__)

Status = InboundMessage.Status

_message_task: str | None = None


def set_message_task(task: str) -> None:
    """Names the django-q2 task (a dotted path taking a message id) that processes
    recorded messages."""
    global _message_task
    _message_task = task


def enqueue_processing(message_ids: Iterable[int]) -> None:
    """Hands messages to the processing task. With no task set, they wait RECEIVED
    (the sweep offers them again once one is)."""
    message_ids = list(message_ids)
    if not message_ids:
        return
    if _message_task is None:
        logger.warning("no task processes inbound messages; %s message(s) wait", len(message_ids))
        return
    from django_q.tasks import async_task

    # One transaction for the batch: on the database queue each task is a row, and a
    # commit apiece cost the listener 1.4-6 ms per recorded message against ~1 ms here
    # (the wake-ups are sent, once, at commit).
    with transaction.atomic():
        for message_id in message_ids:
            async_task(_message_task, message_id, task_name=f"process_message {message_id}")


def message_claim(*, message_id: int, worker: str) -> bool:
    """RECEIVED/RETRYABLE (due) → PROCESSING; False when it is not ours to process."""
    return MESSAGE_WORK.claim(pk=message_id, worker=worker)


def message_run(*, message_id: int, worker: str, work: Callable[[], str]) -> str | None:
    """Claims a message and runs ``work`` on it (core.claims.ClaimedWork.run): the
    final status, None when there was nothing to do, or RETRYABLE/FAILED on error."""
    return MESSAGE_WORK.run(pk=message_id, worker=worker, work=work)


def message_finish(*, message_id: int, worker: str, status: str, **fields: object) -> None:
    """PROCESSING (claimed by ``worker``) → ``status``; raises ClaimLost otherwise."""
    MESSAGE_WORK.finish(pk=message_id, worker=worker, status=status, **fields)


def message_retry_or_fail(
    *, message_id: int, worker: str | None, error: BaseException | str
) -> str | None:
    """PROCESSING → RETRYABLE with backoff, or FAILED with an alert past the attempt limit."""
    return MESSAGE_WORK.retry_or_fail(pk=message_id, worker=worker, error=error)


REQUEUEABLE = (Status.DONE, Status.IGNORED, Status.FAILED, Status.REJECTED, Status.RETRYABLE)


def messages_requeue(*, message_ids: Iterable[int]) -> int:
    """Operator action: finished or retrying messages with a stored body are processed
    again from the start."""
    return MESSAGE_WORK.requeue(
        pks=message_ids,
        from_states=REQUEUEABLE,
        enqueue=lambda ids: enqueue_processing(ids),
        raw__isnull=False,
    )


def messages_mark_failed(*, message_ids: Iterable[int], reason: str) -> int:
    """Operator action: waiting or processing messages are given up."""
    return InboundMessage.objects.filter(
        pk__in=list(message_ids),
        status__in=[Status.RECEIVED, Status.RETRYABLE, Status.PROCESSING],
    ).update(
        status=Status.FAILED,
        **stored("last_error", reason),
        claimed_by="",
        claimed_at=None,
        finished_at=Now(),
        updated_at=Now(),
    )


def messages_sweep() -> SweepResult:
    """Retries expired processing claims and re-enqueues due or forgotten messages."""
    return MESSAGE_WORK.sweep(
        claim_timeout=settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT,
        requeue_after=settings.PRICEFEED_REQUEUE_AFTER,
        enqueue=lambda ids: enqueue_processing(ids),
    )


def _describe_message(message_id: int) -> str:
    subject = InboundMessage.objects.filter(pk=message_id).values_list("subject", flat=True)
    return repr(subject.first() or "")


MESSAGE_WORK = ClaimedWork(
    model=InboundMessage,
    running=Status.PROCESSING,
    retry=Status.RETRYABLE,
    failed=Status.FAILED,
    waiting=(Status.RECEIVED, Status.RETRYABLE),
    queued_field="updated_at",
    what="message",
    touch=("updated_at",),
    describe=_describe_message,
    id_key="message_id",
    crashes_field="crashes",
)
