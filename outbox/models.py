from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now


class EventStatus(models.TextChoices):
    NEW = "NEW", "New"
    PROCESSING = "PROCESSING", "Processing"
    SENT = "SENT", "Sent"
    FAILED = "FAILED", "Failed"


class OutboxEvent(models.Model):
    """Something that happened, recorded in the transaction that made it happen.

    ``id`` is the event id that consumers deduplicate on.
    """

    Status = EventStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=100)
    aggregate_type = models.CharField(max_length=100)
    aggregate_id = models.CharField(max_length=100)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status, default=Status.NEW)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(db_default=Now())
    claimed_by = models.CharField(max_length=255, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(db_default=Now())
    sent_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)  # SENT or FAILED

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("retry_outboxevent", "Can retry or requeue outbox events"),
            ("fail_outboxevent", "Can give up outbox events"),
        ]
        indexes = [
            # The claim query reads only NEW rows in (next_attempt_at, id) order; however
            # many SENT rows pile up, this index stays the size of the backlog.
            models.Index(
                fields=["next_attempt_at", "id"],
                condition=Q(status=EventStatus.NEW),
                name="outbox_new_due",
            ),
            models.Index(fields=["aggregate_type", "aggregate_id"], name="outbox_aggregate"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.aggregate_type}:{self.aggregate_id} ({self.status})"
