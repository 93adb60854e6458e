"""Running the pipeline by calling its services, as the listener and workers would."""

from __future__ import annotations

import hashlib
import uuid
from decimal import Decimal

from mailboxes import services as mailbox_services
from mailboxes.models import InboundMessage
from pricefeed import services
from devkit.samples import supplier_email
from pricefeed.models import PriceImport

ROWS = [
    ("A-1", "Болт М8", Decimal("1234.50"), 10),
    ("A-2", "Гайка М8", Decimal("1.15"), 0),
    ("A-3", "Шайба", Decimal("0.60"), 500),
]


def receive(mailbox, attachments, *, subject="Прайс") -> InboundMessage:
    """Records a message and runs matching."""
    raw = supplier_email(subject=subject, attachments=attachments)
    message = InboundMessage.objects.create(
        mailbox=mailbox,
        folder="INBOX",
        uidvalidity=1,
        uid=InboundMessage.objects.count() + 1,
        raw=raw,
        size=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
        dedup_key=uuid.uuid4().hex,
    )
    mailbox_services.message_process(message_id=message.pk, worker="w")
    message.refresh_from_db()
    return message


def run_all(message) -> list[PriceImport]:
    """Runs every import of a message, in creation order."""
    for price_import in message.imports.order_by("pk"):
        services.price_import_run(import_id=price_import.pk, worker="w")
    return list(message.imports.order_by("pk"))
