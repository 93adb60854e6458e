"""Raw messages for the mailboxes tests."""

from __future__ import annotations

from collections.abc import Sequence
from email.message import EmailMessage

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


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
