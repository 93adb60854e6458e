"""Builders of test data, the one place that knows how a mailbox, a config, a message or
an import is made for the tests. The fixtures in the conftest files call into it."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from decimal import Decimal
from email.message import EmailMessage
from typing import Any

from django.db.models import Max

from core.storedtext import Text
from devkit.samples import supplier_email
from mailboxes.models import InboundMessage, Mailbox
from outbox import services as outbox_services
from pricefeed.imports.lifecycle import price_import_run
from pricefeed.intake import message_process
from pricefeed.models import PriceImport, PriceListConfig

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# -- mailboxes and configs ---------------------------------------------------------------

MAILBOX = {
    "name": "prices",
    "host": "imap.supplier.example",
    "port": 993,
    "security": Mailbox.Security.SSL,
    "username": "buyer",
    "password": "s3cret-imap-password",
}

CONFIG = {
    "name": "Поставщик",
    "sender_pattern": "*@acme.test",
    "filename_pattern": "*",
}


def create_mailbox(**fields: object) -> Mailbox:
    """A mailbox with MAILBOX's values, ``fields`` overriding them (a second mailbox
    needs another ``name``: names are unique)."""
    return Mailbox.objects.create(**(MAILBOX | fields))


def create_config(mailbox: Mailbox, **fields: object) -> PriceListConfig:
    """A config of ``mailbox`` with CONFIG's values, ``fields`` overriding them."""
    return PriceListConfig.objects.create(mailbox=mailbox, **(CONFIG | fields))


# -- raw messages ------------------------------------------------------------------------


def price_mail(
    attachments: Sequence[tuple[str, bytes]] = (("прайс_июнь.xlsx", b"PK\x03\x04 price"),),
    *,
    subject: str = "Прайс-лист на июнь",
    sender: str = "Торговый дом Поставщик <prices@supplier.ru>",
    message_id: str | None = "<june@supplier.ru>",
    date: str = "Mon, 03 Jun 2024 10:15:00 +0300",
    body: str = "Добрый день, прайс во вложении.",
) -> bytes:
    """Returns the bytes of a well-formed supplier message with xlsx attachments."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "buyer@pricefeed.example"
    msg["Subject"] = subject
    msg["Date"] = date
    if message_id is not None:
        msg["Message-ID"] = message_id
    msg.set_content(body)
    maintype, subtype = XLSX.split("/")
    for filename, data in attachments:
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return msg.as_bytes()


# -- inbound messages --------------------------------------------------------------------

# Marks "no raw given" apart from raw=None (a message refused unread).
DEFAULT_RAW: Any = object()


def _next_uid(mailbox: Mailbox, folder: str, uidvalidity: int) -> int:
    last = InboundMessage.objects.filter(
        mailbox=mailbox, folder=folder, uidvalidity=uidvalidity
    ).aggregate(last=Max("uid"))["last"]
    return (last or 0) + 1


def create_message(
    mailbox: Mailbox,
    raw: bytes | None = DEFAULT_RAW,
    *,
    status: str = InboundMessage.Status.RECEIVED,
    **fields: object,
) -> InboundMessage:
    """An InboundMessage row made directly (bypassing recording) in ``status``; ``raw``
    defaults to price_mail(), None is a message refused unread."""
    raw = price_mail() if raw is DEFAULT_RAW else raw
    values: dict[str, object] = {
        "mailbox": mailbox,
        "folder": "INBOX",
        "uidvalidity": 1,
        "subject": "Прайс-лист на июнь",
        "from_address": "prices@supplier.ru",
        "message_id": f"<{uuid.uuid4().hex}@supplier.ru>",
        "raw": raw,
        "size": len(raw or b""),
        "sha256": hashlib.sha256(raw).hexdigest() if raw is not None else "",
        "dedup_key": uuid.uuid4().hex,
        "status": status,
    }
    values.update(fields)
    if "uid" not in values:
        values["uid"] = _next_uid(values["mailbox"], values["folder"], values["uidvalidity"])
    return InboundMessage.objects.create(**values)


# -- the pipeline, run by calling its services as the listener and workers would ---------

ROWS = [
    ("A-1", "Болт М8", Decimal("1234.50"), 10),
    ("A-2", "Гайка М8", Decimal("1.15"), 0),
    ("A-3", "Шайба", Decimal("0.60"), 500),
]


def receive(
    mailbox: Mailbox, attachments: Iterable[tuple[str, bytes]], *, subject: str = "Прайс"
) -> InboundMessage:
    """Records a message from acme.test (devkit.samples.supplier_email) and runs
    matching. Only the raw bytes are recorded: no subject, sender or Message-ID fields
    (message_process reads the raw message; nobody is notified as its sender)."""
    raw = supplier_email(subject=subject, attachments=attachments)
    message = create_message(mailbox, raw, subject="", from_address="", message_id="")
    message_process(message_id=message.pk, worker="w")
    message.refresh_from_db()
    return message


def run_all(message: InboundMessage) -> list[PriceImport]:
    """Runs every import of a message, in creation order."""
    for price_import in message.imports.order_by("pk"):
        price_import_run(import_id=price_import.pk, worker="w")
    return list(message.imports.order_by("pk"))


def deliver_everything() -> None:
    """Runs the outbox as dispatch_outbox would, until nothing is due."""
    while ids := outbox_services.events_claim(dispatcher="d", limit=100):
        outbox_services.events_deliver(event_ids=ids, dispatcher="d")


def english(stored: Any) -> Any:
    """The English of a stored text (core.storedtext's form), of each in a list, and of
    each row error's ``error``: what a test compares with the sentence it expects."""
    if isinstance(stored, list):
        return [english(item) for item in stored]
    if isinstance(stored, dict) and "row" in stored and "error" in stored:
        return {**stored, "error": english(stored["error"])}
    if isinstance(stored, dict):
        return str(Text.from_json(stored))
    return stored
