from __future__ import annotations

import os
import time
import uuid

from django.apps import apps
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


def time_ordered_uuid() -> uuid.UUID:
    """A UUID whose first 48 bits are the Unix time in milliseconds (the layout of RFC
    9562's version 7), the other 74 random: as unique as uuid4, but the events published
    together sit together in the primary key. A claim's UPDATE inserts a new index entry
    for each of its rows: with random ids those were ~100 leaf pages scattered over the
    whole index (each one dirtied, and written whole to the WAL after every checkpoint),
    more pages the more SENT rows; with these ids, the few pages at its end."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10))
    # version 7 (bits 48-51) and the RFC variant (bits 64-65)
    value = value & ~(0xF << 76) | 0x7 << 76
    value = value & ~(0x3 << 62) | 0x2 << 62
    return uuid.UUID(int=value)


class EventStatus(models.TextChoices):
    NEW = "NEW", _("New")
    PROCESSING = "PROCESSING", _("Processing")
    SENT = "SENT", _("Sent")
    FAILED = "FAILED", _("Failed")


class OutboxEvent(models.Model):
    """Something that happened, recorded in the transaction that made it happen.

    ``id`` is the event id that consumers deduplicate on.
    """

    Status = EventStatus

    id = models.UUIDField(_("ID"), primary_key=True, default=time_ordered_uuid, editable=False)
    kind = models.CharField(_("kind"), max_length=100)
    aggregate_type = models.CharField(_("aggregate type"), max_length=100)
    aggregate_id = models.CharField(_("aggregate ID"), max_length=100)
    payload = models.JSONField(_("payload"), default=dict)
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.NEW)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt at"), db_default=Now())
    claimed_by = models.CharField(
        pgettext_lazy("outbox event", "claimed by"), max_length=255, blank=True
    )
    claimed_at = models.DateTimeField(
        pgettext_lazy("outbox event", "claimed at"), null=True, blank=True
    )
    last_error = models.TextField(_("last error"), blank=True)
    # The same as a msgid and its values (core.storedtext.Text), shown in the reader's
    # language; last_error holds its English, for logs, the API and search.
    last_error_text = models.JSONField(default=dict, db_default={}, blank=True, editable=False)
    created_at = models.DateTimeField(pgettext_lazy("outbox event", "created at"), db_default=Now())
    sent_at = models.DateTimeField(pgettext_lazy("outbox event", "sent at"), null=True, blank=True)
    finished_at = models.DateTimeField(
        pgettext_lazy("outbox event", "finished at"), null=True, blank=True
    )  # SENT or FAILED

    class Meta:
        verbose_name = _("outbox event")
        verbose_name_plural = _("outbox events")
        ordering = ["-created_at"]
        permissions = [
            ("retry_outboxevent", _("Can retry or requeue outbox events")),
            ("fail_outboxevent", _("Can give up outbox events")),
        ]
        # No other index: every claim and every result rewrites the row (its status is
        # in outbox_new_due's condition), and each index of the table takes a new entry
        # each time. Whoever needs to find its events keeps their ids (a notification
        # keeps its send event's).
        indexes = [
            # The claim query reads only NEW rows in (next_attempt_at, id) order; however
            # many SENT rows pile up, this index stays the size of the backlog.
            models.Index(
                fields=["next_attempt_at", "id"],
                condition=Q(status=EventStatus.NEW),
                name="outbox_new_due",
            ),
        ]

    def __str__(self) -> str:
        from .handlers import kind_label

        return f"{kind_label(self.kind)}: {self.aggregate_name()} ({self.get_status_display()})"

    def aggregate_name(self) -> str:
        """The row the event is about, named in the reader's language ("импорт
        прайс-листа № 63")."""
        try:
            model = apps.get_model(self.aggregate_type)
        except (LookupError, ValueError):
            return f"{self.aggregate_type} № {self.aggregate_id}"
        return f"{model._meta.verbose_name} № {self.aggregate_id}"
