"""What the listener last saw of a mailbox's server, for operators."""

from __future__ import annotations

from django.db.models.functions import Now

from .models import Mailbox


def mailbox_report_connected(*, mailbox_id: int) -> None:
    Mailbox.objects.filter(pk=mailbox_id).update(
        last_connected_at=Now(), last_error="", last_error_at=None
    )


def mailbox_report_error(*, mailbox_id: int, error: str) -> None:
    Mailbox.objects.filter(pk=mailbox_id).update(last_error=error[:2000], last_error_at=Now())
