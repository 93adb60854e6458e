from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.crypto import EncryptedTextField

from .endpoints import amqp_address, webhook_address
from .kinds import EventKind


def _kinds_field() -> ArrayField:
    return ArrayField(
        models.CharField(max_length=40, choices=EventKind.choices),
        verbose_name=_("events"),
        default=list,
        blank=True,
        help_text=_("The kinds of event sent to it."),
    )


class Webhook(models.Model):
    """An HTTPS endpoint that receives the events of the chosen kinds, each POSTed as
    JSON and signed with the webhook's secret (docs/delivery.md)."""

    name = models.CharField(_("name"), max_length=200, unique=True)
    url = models.URLField(_("URL"), max_length=1000)
    # Never shown back, never logged: the receiver's copy checks the signatures.
    secret = EncryptedTextField(_("secret"), help_text=_("Stored encrypted."))
    kinds = _kinds_field()
    enabled = models.BooleanField(pgettext_lazy("webhook", "enabled"), default=True)
    created_at = models.DateTimeField(pgettext_lazy("webhook", "created at"), db_default=Now())

    class Meta:
        verbose_name = _("webhook")
        verbose_name_plural = _("webhooks")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if self.url:
            try:
                webhook_address(self.url)
            except ValidationError as exc:
                raise ValidationError({"url": exc.messages}) from exc


class AmqpTarget(models.Model):
    """A RabbitMQ exchange that receives the events of the chosen kinds: persistent
    messages, published with confirms, ``message_id`` the event's id."""

    name = models.CharField(_("name"), max_length=200, unique=True)
    # Without the password: that is kept apart, encrypted.
    url = models.CharField(
        _("AMQP URL"),
        max_length=1000,
        help_text=_("amqps://user@host:5671/vhost; a password typed in it is stored apart."),
    )
    password = EncryptedTextField(_("password"), blank=True, help_text=_("Stored encrypted."))
    exchange = models.CharField(
        _("exchange"), max_length=255, blank=True, help_text=_("Empty: the default exchange.")
    )
    routing_key = models.CharField(
        _("routing key"),
        max_length=255,
        blank=True,
        help_text=_("Empty: the event's kind."),
    )
    kinds = _kinds_field()
    enabled = models.BooleanField(pgettext_lazy("AMQP target", "enabled"), default=True)
    created_at = models.DateTimeField(pgettext_lazy("AMQP target", "created at"), db_default=Now())

    class Meta:
        verbose_name = _("RabbitMQ target")
        verbose_name_plural = _("RabbitMQ targets")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if self.url:
            try:
                amqp_address(self.url)
            except ValidationError as exc:
                raise ValidationError({"url": exc.messages}) from exc


class Delivery(models.Model):
    """One event to one endpoint: takes effect at least once, with the event's id, however
    often it is retried; at most one per (event, endpoint).

    Sent by its own outbox event (``send_event``), whose retries, backoff and limit are
    the outbox's; its status follows that event's outcome."""

    class Status(models.TextChoices):
        PENDING = "PENDING", pgettext_lazy("delivery", "Pending")
        SENT = "SENT", pgettext_lazy("delivery", "Sent")
        FAILED = "FAILED", pgettext_lazy("delivery", "Failed")

    event_id = models.UUIDField(_("event ID"))
    event_kind = models.CharField(_("event"), max_length=40, choices=EventKind.choices)
    webhook = models.ForeignKey(
        Webhook,
        on_delete=models.CASCADE,
        related_name="deliveries",
        verbose_name=_("webhook"),
        null=True,
        blank=True,
    )
    amqp_target = models.ForeignKey(
        AmqpTarget,
        on_delete=models.CASCADE,
        related_name="deliveries",
        verbose_name=_("RabbitMQ target"),
        null=True,
        blank=True,
    )
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.PENDING)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    # The same as a msgid and its values (core.storedtext.Text), shown in the reader's
    # language; last_error holds its English, for logs and search.
    last_error_text = models.JSONField(default=dict, db_default={}, blank=True, editable=False)
    created_at = models.DateTimeField(pgettext_lazy("delivery", "created at"), db_default=Now())
    sent_at = models.DateTimeField(pgettext_lazy("delivery", "sent at"), null=True, blank=True)
    # The outbox event that sends it (its id), published in the transaction that makes
    # the delivery; the send path finds its deliveries by it.
    send_event = models.UUIDField(
        _("send event"), null=True, blank=True, editable=False, unique=True
    )

    class Meta:
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")
        ordering = ["-created_at", "-id"]
        permissions = [("retry_delivery", _("Can retry deliveries"))]
        constraints = [
            models.UniqueConstraint(
                fields=["event_id", "webhook"], name="one_delivery_per_webhook"
            ),
            models.UniqueConstraint(
                fields=["event_id", "amqp_target"], name="one_delivery_per_amqp_target"
            ),
            models.CheckConstraint(
                condition=models.Q(webhook__isnull=False, amqp_target__isnull=True)
                | models.Q(webhook__isnull=True, amqp_target__isnull=False),
                name="delivery_has_one_endpoint",
            ),
        ]
        indexes = [
            # The console's count of failing deliveries reads the unfinished ones only.
            models.Index(
                fields=["status"],
                condition=~models.Q(status="SENT"),
                name="delivery_not_sent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_event_kind_display()} → {self.endpoint} ({self.get_status_display()})"

    @property
    def endpoint(self) -> Webhook | AmqpTarget | None:
        return self.webhook if self.webhook_id else self.amqp_target
