from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.crypto import EncryptedTextField


class Mailbox(models.Model):
    """An IMAP mailbox that price lists arrive in; several configs share one mailbox."""

    class Security(models.TextChoices):
        SSL = "ssl", _("SSL/TLS (implicit, usually port 993)")
        STARTTLS = "starttls", _("STARTTLS (usually port 143)")
        PLAIN = "plain", _("None (plain text; trusted networks only)")

    class Backfill(models.TextChoices):
        ALL = "all", _("Every message already in the folder")
        NEW = "new", _("Only messages that arrive from now on")

    name = models.CharField(_("name"), max_length=100, unique=True)
    host = models.CharField(_("host"), max_length=255)
    port = models.PositiveIntegerField(
        _("port"), default=993, validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    security = models.CharField(
        _("security"), max_length=10, choices=Security, default=Security.SSL
    )
    username = models.CharField(_("username"), max_length=255)
    password = EncryptedTextField(_("password"), blank=True, help_text=_("Stored encrypted."))
    folder = models.CharField(_("folder"), max_length=255, default="INBOX")
    enabled = models.BooleanField(_("enabled"), default=True)
    backfill = models.CharField(
        _("backfill"),
        max_length=10,
        choices=Backfill,
        default=Backfill.ALL,
        help_text=_("What the first connection records when there is no checkpoint yet."),
    )
    weight = models.PositiveIntegerField(
        _("weight"),
        null=True,
        blank=True,
        help_text=_("Load weight for lease balancing; empty = number of enabled configs."),
    )
    # What the listener last saw; written by the lease owner, shown in admin.
    last_connected_at = models.DateTimeField(_("last connected at"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    last_error_at = models.DateTimeField(_("last error at"), null=True, blank=True)
    # The same error as a msgid and its parameters (texts.Text), shown translated.
    last_error_text = models.JSONField(default=dict, blank=True, editable=False)
    # The last "Test connection" (run by a worker, not in the web request).
    test_requested_at = models.DateTimeField(_("test requested at"), null=True, blank=True)
    test_finished_at = models.DateTimeField(_("test finished at"), null=True, blank=True)
    test_succeeded = models.BooleanField(_("test succeeded"), null=True, blank=True)
    test_result = models.TextField(_("test result"), blank=True)
    # The same result as a msgid and its parameters (texts.Text), shown in the reader's
    # language; {} for a result written before it existed.
    test_result_text = models.JSONField(default=dict, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), db_default=Now())
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("mailbox")
        verbose_name_plural = _("mailboxes")
        ordering = ["name"]
        permissions = [("test_mailbox", "Can test a mailbox's connection")]

    # Which server a password is sent to: changing any of them forgets a stored password.
    SERVER_FIELDS = ("host", "port", "security", "username")

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        self._forget_password_of_another_server(kwargs)
        super().save(*args, **kwargs)

    def server_identity(self) -> tuple:
        return tuple(getattr(self, name) for name in self.SERVER_FIELDS)

    def set_password(self, password: str) -> None:
        """Sets the password entered for the server as configured now: a save that also
        changes host, port, security or username keeps it (see ``save``)."""
        self.password = password
        self._password_server = self.server_identity()

    def _forget_password_of_another_server(self, save_kwargs: dict) -> None:
        """The stored password only ever goes to the server it was entered for: a save
        that changes host, port, security or username and still carries the stored
        password clears it (connections then ask for it: CredentialsMissing). A
        different password, or one given with ``set_password`` after the change, is
        kept. ``QuerySet.update`` is not guarded; nothing here uses it on these fields."""
        if self._state.adding or self.pk is None:
            return
        if getattr(self, "_password_server", None) == self.server_identity():
            return
        update_fields = save_kwargs.get("update_fields")
        guarded = {*self.SERVER_FIELDS, "password"}
        if update_fields is not None and not guarded.intersection(update_fields):
            return
        stored = (
            type(self)
            .objects.filter(pk=self.pk)
            .values_list(*self.SERVER_FIELDS, "password")
            .first()
        )
        if stored is None or tuple(stored[:-1]) == self.server_identity():
            return
        if self.password == stored[-1]:
            self.password = ""
            if update_fields is not None:
                save_kwargs["update_fields"] = {*update_fields, "password"}

    def connection_fingerprint(self) -> tuple:
        """The settings whose change requires a new IMAP connection."""
        return (
            self.host,
            self.port,
            self.security,
            self.username,
            self.password,
            self.folder,
            self.backfill,
        )


class MailboxLease(models.Model):
    """Who listens to a mailbox. ``token`` grows on every acquisition and fences writes."""

    mailbox = models.OneToOneField(
        Mailbox, on_delete=models.CASCADE, related_name="lease", verbose_name=_("mailbox")
    )
    owner = models.CharField(_("owner"), max_length=255, blank=True, db_index=True)
    token = models.BigIntegerField(_("token"), default=0)
    acquired_at = models.DateTimeField(_("acquired at"), null=True, blank=True)
    renewed_at = models.DateTimeField(_("renewed at"), null=True, blank=True)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    # Set from admin ("force release"): the owner's next renewal fails, it stops
    # listening and frees the lease.
    release_requested = models.BooleanField(_("release requested"), default=False)

    class Meta:
        verbose_name = _("mailbox lease")
        verbose_name_plural = _("mailbox leases")
        permissions = [("release_mailboxlease", "Can force the release of a mailbox lease")]

    def __str__(self) -> str:
        return gettext("%(mailbox)s → %(owner)s (token %(token)s)") % {
            "mailbox": self.mailbox,
            "owner": self.owner or gettext("free"),
            "token": self.token,
        }


class InstanceHeartbeat(models.Model):
    """A running ``listen_mail`` process."""

    instance_id = models.CharField(_("instance"), max_length=255, unique=True)
    host = models.CharField(_("host"), max_length=255)
    pid = models.IntegerField(_("PID"))
    started_at = models.DateTimeField(_("started at"), db_default=Now())
    last_seen = models.DateTimeField(_("last seen"), db_default=Now())
    stopping = models.BooleanField(_("stopping"), default=False)

    class Meta:
        verbose_name = _("listener instance")
        verbose_name_plural = _("listener instances")
        ordering = ["instance_id"]

    def __str__(self) -> str:
        return self.instance_id


class MailboxCheckpoint(models.Model):
    """The highest UID recorded for a folder under one UIDVALIDITY."""

    mailbox = models.ForeignKey(
        Mailbox, on_delete=models.CASCADE, related_name="checkpoints", verbose_name=_("mailbox")
    )
    folder = models.CharField(_("folder"), max_length=255)
    uidvalidity = models.BigIntegerField(_("UIDVALIDITY"))
    last_uid = models.BigIntegerField(_("last UID"), default=0)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("checkpoint")
        verbose_name_plural = _("checkpoints")
        constraints = [
            models.UniqueConstraint(fields=["mailbox", "folder"], name="checkpoint_per_folder"),
        ]

    def __str__(self) -> str:
        return gettext(
            "%(mailbox)s, folder %(folder)s: UIDVALIDITY %(uidvalidity)s, UID %(uid)s"
        ) % {
            "mailbox": self.mailbox,
            "folder": self.folder,
            "uidvalidity": self.uidvalidity,
            "uid": self.last_uid,
        }


class MessageStatus(models.TextChoices):
    RECEIVED = "RECEIVED", pgettext_lazy("message status", "Received")
    PROCESSING = "PROCESSING", pgettext_lazy("message status", "Processing")
    DONE = "DONE", pgettext_lazy("message status", "Done")
    IGNORED = "IGNORED", pgettext_lazy("message status", "Ignored (no config matched)")
    RETRYABLE = "RETRYABLE", pgettext_lazy("message status", "Retryable")
    FAILED = "FAILED", pgettext_lazy("message status", "Failed")
    REJECTED = "REJECTED", pgettext_lazy("message status", "Rejected")


# Recorded, not yet finished by a worker: what admission control bounds.
IN_FLIGHT = (MessageStatus.RECEIVED, MessageStatus.PROCESSING)


class InboundMessage(models.Model):
    """One e-mail as received: the durable record every later step starts from."""

    Status = MessageStatus

    mailbox = models.ForeignKey(
        Mailbox, on_delete=models.PROTECT, related_name="messages", verbose_name=_("mailbox")
    )
    folder = models.CharField(_("folder"), max_length=255)
    uidvalidity = models.BigIntegerField(_("UIDVALIDITY"))
    uid = models.BigIntegerField(_("UID"))
    message_id = models.CharField(_("Message-ID"), max_length=998, blank=True, db_index=True)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)
    from_address = models.CharField(_("sender address"), max_length=320, blank=True)
    from_header = models.CharField(_("From header"), max_length=998, blank=True)
    subject = models.CharField(_("subject"), max_length=998, blank=True)
    size = models.BigIntegerField(_("size (bytes)"), default=0)
    sha256 = models.CharField(_("SHA-256"), max_length=64, blank=True)
    # The message exactly as the server returned it; empty when it was refused unread.
    # Compressed with lz4 on PostgreSQL (migration 0003): half the time of pglz to store.
    raw = models.BinaryField(_("raw message"), null=True, blank=True, editable=False)
    dedup_key = models.CharField(_("deduplication key"), max_length=64, unique=True)
    status = models.CharField(
        _("status"), max_length=10, choices=Status, default=Status.RECEIVED, db_index=True
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    # Runs that ended with their worker process (killed, crashed, out of memory):
    # core.claims.ClaimedWork.crashed; FAILED at PRICEFEED_CRASH_MAX_ATTEMPTS.
    crashes = models.PositiveSmallIntegerField(_("crashes"), default=0, db_default=0)
    claimed_by = models.CharField(_("claimed by"), max_length=255, blank=True)
    claimed_at = models.DateTimeField(_("claimed at"), null=True, blank=True)
    next_attempt_at = models.DateTimeField(_("next attempt at"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    # The same as a msgid and its values (core.storedtext.Text), shown in the reader's
    # language; last_error holds its English, for logs, the API and search.
    last_error_text = models.JSONField(default=dict, db_default={}, blank=True, editable=False)
    warnings = models.JSONField(_("warnings"), default=list, blank=True)
    match_report = models.JSONField(_("match report"), default=dict, blank=True)
    received_at = models.DateTimeField(_("received at"), db_default=Now(), db_index=True)
    updated_at = models.DateTimeField(_("updated at"), db_default=Now())
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("inbound message")
        verbose_name_plural = _("inbound messages")
        ordering = ["-received_at", "-id"]
        permissions = [
            ("reprocess_inboundmessage", "Can reprocess inbound messages"),
            ("fail_inboundmessage", "Can mark inbound messages failed"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["mailbox", "folder", "uidvalidity", "uid"], name="one_record_per_uid"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="inbound_status_due"),
            # Admission control counts these per mailbox on every fetch.
            models.Index(
                fields=["mailbox", "status"],
                name="inbound_in_flight",
                condition=models.Q(status__in=IN_FLIGHT),
            ),
        ]

    def __str__(self) -> str:
        return gettext("№ %(pk)s «%(subject)s» (%(status)s)") % {
            "pk": self.pk,
            "subject": self.subject[:60],
            "status": self.get_status_display(),
        }
