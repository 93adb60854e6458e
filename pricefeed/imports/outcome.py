"""An import's outcome, announced through the outbox in the transaction that stores it."""

from __future__ import annotations

from outbox.services import publish
from pricefeed.models import PriceImport

OUTCOME_EVENT = "price_import.finished"


def publish_outcome(import_id: int) -> None:
    """Announces an import's outcome through the outbox; called inside the transaction
    that stores it, so the event exists exactly when the outcome does."""
    price_import = (
        PriceImport.objects.select_related("message").defer("message__raw").get(pk=import_id)
    )
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
