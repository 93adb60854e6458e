"""An import's outcome, announced through the outbox in the transaction that stores it.

A message with one price list announces its import's outcome (``OUTCOME_EVENT``). A
message with several announces them together, once, when the last of its imports
finishes (``MESSAGE_OUTCOME_EVENT``): one mail with twenty files is one mail per
recipient, not twenty.
"""

from __future__ import annotations

import logging

from mailboxes.models import InboundMessage
from outbox.services import publish
from pricefeed.models import PriceImport

logger = logging.getLogger(__name__)

OUTCOME_EVENT = "price_import.finished"
MESSAGE_OUTCOME_EVENT = "message.imports_finished"
# The same outcome for other systems (webhooks, RabbitMQ: the delivery app), one per
# import, whatever its message brought: a payload of our ids and the file's facts only.
FINISHED_EVENT = "import.finished"

FINAL = (PriceImport.Status.SUCCEEDED, PriceImport.Status.PARTIAL, PriceImport.Status.FAILED)


def publish_outcome(import_id: int) -> None:
    """Announces an import's outcome through the outbox; called inside the transaction
    that stores it (after its status is written), so the event exists exactly when the
    outcome does.

    When the import's message has other imports, the outcome is announced by whichever
    of them finishes last, for all of them. Which one that is, is decided under a row
    lock on the message: of two imports finishing at once, the second to take the lock
    waits until the first has committed and then (READ COMMITTED, Django's isolation
    level on PostgreSQL: each statement sees what was committed before it) sees its
    outcome, so exactly one of them finds every import finished."""
    price_import = (
        PriceImport.objects.select_related("message", "config")
        .defer("message__raw")
        .get(pk=import_id)
    )
    _publish_finished(price_import)
    siblings = PriceImport.objects.filter(message_id=price_import.message_id)
    if not siblings.exclude(pk=import_id).exists():
        _publish_import(price_import)
        return
    # Taken after this import's own status was written: see the docstring.
    InboundMessage.objects.select_for_update().values_list("pk", flat=True).get(
        pk=price_import.message_id
    )
    if siblings.exclude(status__in=FINAL).exists():
        logger.debug(
            "import finished before its siblings import_id=%s message_id=%s",
            import_id,
            price_import.message_id,
            extra={"import_id": import_id, "message_id": price_import.message_id},
        )
        return
    _publish_message(price_import.message, finished_by=import_id)


def _publish_finished(price_import: PriceImport) -> None:
    """``import.finished``: what an outside system needs of the outcome, by value."""
    finished = price_import.finished_at
    publish(
        FINISHED_EVENT,
        price_import,
        {
            "import_id": price_import.pk,
            "config_id": price_import.config_id,
            "config_name": price_import.config.name,
            "status": price_import.status,
            # "" (taken at once or failed), HELD, APPROVED or REJECTED; whether its rows
            # are the config's current catalogue now.
            "review": price_import.review,
            "accepted": price_import.accepted_at is not None,
            "filename": price_import.filename,
            "rows_total": price_import.rows_total,
            "rows_ok": price_import.rows_ok,
            "rows_failed": price_import.rows_failed,
            "rows_skipped": price_import.rows_skipped,
            "finished_at": finished.isoformat() if finished is not None else None,
        },
    )


def _publish_import(price_import: PriceImport) -> None:
    diff = price_import.diff or {}
    publish(
        OUTCOME_EVENT,
        price_import,
        {
            "import_id": price_import.pk,
            "status": price_import.status,
            "config_id": price_import.config_id,
            "message_id": price_import.message_id,
            "sender": price_import.message.from_address,
            "filename": price_import.filename,
            "rows_total": price_import.rows_total,
            "rows_ok": price_import.rows_ok,
            "rows_failed": price_import.rows_failed,
            "error": price_import.last_error[:1000],
            "diff": {k: diff.get(k, 0) for k in ("added", "removed", "changed")},
        },
    )


def _publish_message(message: InboundMessage, *, finished_by: int) -> None:
    imports = list(
        PriceImport.objects.filter(message_id=message.pk)
        .order_by("pk")
        .values_list("pk", "status", "filename")
    )
    statuses: dict[str, int] = {}
    for _pk, status, _filename in imports:
        statuses[status] = statuses.get(status, 0) + 1
    publish(
        MESSAGE_OUTCOME_EVENT,
        message,
        {
            "message_id": message.pk,
            "sender": message.from_address,
            "finished_by": finished_by,
            "statuses": statuses,
            "imports": [
                {"import_id": pk, "status": status, "filename": filename[:200]}
                for pk, status, filename in imports[:1000]
            ],
        },
    )
