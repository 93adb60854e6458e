from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from pricefeed.models import PriceImport


class Subscription(models.Model):
    """Who hears about which import outcomes, for which configs (none chosen = all)."""

    email = models.EmailField(blank=True, help_text="Empty when only replying to the sender.")
    reply_to_sender = models.BooleanField(
        default=False, help_text="Also write to the supplier address the price list came from."
    )
    configs = models.ManyToManyField("pricefeed.PriceListConfig", blank=True)
    on_succeeded = models.BooleanField(default=True)
    on_partial = models.BooleanField(default=True)
    on_failed = models.BooleanField(default=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(email="") | models.Q(reply_to_sender=True),
                name="subscription_has_a_recipient",
                violation_error_message="Give an e-mail address, or tick “reply to sender”.",
            ),
        ]

    def __str__(self) -> str:
        who = self.email or "the sender"
        return f"{who}{' + sender' if self.email and self.reply_to_sender else ''}"

    def wants(self, status: str) -> bool:
        wanted: dict[str, bool] = {
            PriceImport.Status.SUCCEEDED: self.on_succeeded,
            PriceImport.Status.PARTIAL: self.on_partial,
            PriceImport.Status.FAILED: self.on_failed,
        }
        return wanted.get(status, False)


class Notification(models.Model):
    """One e-mail about one import to one recipient: takes effect once, whatever retries."""

    class Status(models.TextChoices):
        PENDING = "PENDING", "Pending"
        SENT = "SENT", "Sent"
        FAILED = "FAILED", "Failed"

    price_import = models.ForeignKey(
        "pricefeed.PriceImport", on_delete=models.CASCADE, related_name="notifications"
    )
    recipient = models.EmailField()
    kind = models.CharField(max_length=20)  # the import outcome: SUCCEEDED, PARTIAL, FAILED
    status = models.CharField(max_length=10, choices=Status, default=Status.PENDING)
    message_id = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(db_default=Now())
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["price_import", "recipient", "kind"], name="one_notification_each"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} → {self.recipient} ({self.status})"
