"""State changes of price lists."""

from __future__ import annotations

from pricefeed.matching import Attachment

from .models import PriceImport


def price_imports_create(
    *, message_id: int, items: list[tuple[int, Attachment]]
) -> list[PriceImport]:
    """Creates one PENDING PriceImport per (config, attachment); existing ones are kept.

    Called inside the transaction that finishes the message, so a message is DONE exactly
    when its imports exist.
    """
    if not items:
        return []
    return PriceImport.objects.bulk_create(
        [
            PriceImport(
                message_id=message_id,
                config_id=config_id,
                attachment_key=attachment.key,
                filename=attachment.filename,
                content_type=attachment.content_type,
                size=attachment.size,
                sha256=attachment.sha256,
            )
            for config_id, attachment in items
        ],
        ignore_conflicts=True,
    )
