from __future__ import annotations

from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class ProcessKind(models.TextChoices):
    LISTEN_MAIL = "listen_mail", "listen_mail"
    QCLUSTER = "qcluster", "qcluster"
    DISPATCH_OUTBOX = "dispatch_outbox", "dispatch_outbox"


class ProcessHeartbeat(models.Model):
    """A running long-lived process of any kind and the django-q2 broker it uses.

    Separate from ``mailboxes.InstanceHeartbeat``, whose live rows are the
    ``listen_mail`` instances that share the mailboxes' leases."""

    Kind = ProcessKind

    process_id = models.CharField(_("process id"), max_length=255, unique=True)
    kind = models.CharField(
        pgettext_lazy("process", "kind"), max_length=32, choices=ProcessKind.choices
    )
    host = models.CharField(pgettext_lazy("process", "host"), max_length=255)
    pid = models.IntegerField(_("PID"))
    # core.brokers.fingerprint(): "orm:default", "redis:host:6379/0"; never a password.
    broker = models.CharField(pgettext_lazy("process", "broker"), max_length=255)
    started_at = models.DateTimeField(pgettext_lazy("process", "started at"), db_default=Now())
    last_seen = models.DateTimeField(pgettext_lazy("process", "last seen"), db_default=Now())
    stopped = models.BooleanField(pgettext_lazy("process", "stopped"), default=False)

    class Meta:
        ordering = ["kind", "process_id"]
        verbose_name = _("process heartbeat")
        verbose_name_plural = _("process heartbeats")

    def __str__(self) -> str:
        return f"{self.kind} {self.process_id}"
