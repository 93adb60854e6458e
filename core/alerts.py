"""Alerts for terminal failures: an ERROR log line and a mail to ADMINS after commit."""

from __future__ import annotations

import logging

from django.core.mail import mail_admins
from django.db import transaction

logger = logging.getLogger(__name__)


def alert(subject: str, body: str, **extra: object) -> None:
    logger.error("ALERT %s: %s", subject, body, extra={"action": "alert", **extra})

    def send() -> None:
        try:
            mail_admins(f"pricefeed: {subject}", body, fail_silently=False)
        except Exception:
            logger.exception("alert mail to ADMINS failed subject=%s", subject)

    transaction.on_commit(send)
