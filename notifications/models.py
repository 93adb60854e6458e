from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Now
from django.utils import translation
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from pricefeed.models import PriceImport

from .kinds import kind_label


def languages() -> list[tuple[str, str]]:
    """The languages a mail can be written in: settings.LANGUAGES, read when asked (a
    callable, so that migrations do not copy the list)."""
    return list(settings.LANGUAGES)


def default_language() -> str:
    """The language of LANGUAGE_CODE among settings.LANGUAGES ("en-us" gives "en")."""
    return supported_language(settings.LANGUAGE_CODE)


def supported_language(code: str) -> str:
    """``code`` as one of settings.LANGUAGES (a regional variant gives its language), or
    the default language when it is none of them (a language since removed, or "")."""
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        if code != settings.LANGUAGE_CODE:
            return default_language()
        return settings.LANGUAGES[0][0]


class Subscription(models.Model):
    """Who hears about which import outcomes, for which configs (none chosen = all)."""

    email = models.EmailField(
        _("e-mail address"), blank=True, help_text=_("Empty when only replying to the sender.")
    )
    reply_to_sender = models.BooleanField(
        _("reply to sender"),
        default=False,
        help_text=_("Also write to the supplier address the price list came from."),
    )
    configs = models.ManyToManyField(
        "pricefeed.PriceListConfig",
        blank=True,
        verbose_name=_("configs"),
        help_text=_("None chosen: every config."),
    )
    language = models.CharField(
        _("language"),
        max_length=15,
        choices=languages,
        default=default_language,
        help_text=_("The language of the mails, subject and text, to this address and the sender."),
    )
    on_succeeded = models.BooleanField(_("on success"), default=True)
    on_partial = models.BooleanField(_("on partial success"), default=True)
    on_failed = models.BooleanField(_("on failure"), default=True)
    on_overdue = models.BooleanField(
        _("when a list is overdue"),
        default=True,
        help_text=_(
            "When a config's expected price list has not come on time (to the e-mail "
            "address only: there is no sender to reply to)."
        ),
    )
    enabled = models.BooleanField(pgettext_lazy("subscription", "enabled"), default=True)

    class Meta:
        verbose_name = _("subscription")
        verbose_name_plural = _("subscriptions")
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(email="") | models.Q(reply_to_sender=True),
                name="subscription_has_a_recipient",
                violation_error_message=_("Give an e-mail address, or tick “reply to sender”."),
            ),
        ]

    def __str__(self) -> str:
        if not self.email:
            return gettext("the sender")
        if self.reply_to_sender:
            return gettext("%(email)s + sender") % {"email": self.email}
        return self.email

    def wants(self, flag: str) -> bool:
        """Whether this subscription asks for the mails that ``flag`` (one of its
        ``on_…`` fields, named by a notification kind) stands for."""
        return bool(getattr(self, flag, False))


class Notification(models.Model):
    """One e-mail of one kind (notifications.kinds) about one subject to one recipient:
    takes effect once, whatever retries.

    The subject is the row the mail is about, in the field its kind names: an import
    (``price_import``: its outcome, the outcome in ``outcome``) or an overdue-list alert
    (``alert``). A new kind whose subject is another model adds a field for it here."""

    class Status(models.TextChoices):
        PENDING = "PENDING", _("Pending")
        SENT = "SENT", _("Sent")
        FAILED = "FAILED", _("Failed")

    kind = models.CharField(_("kind"), max_length=40)
    price_import = models.ForeignKey(
        "pricefeed.PriceImport",
        on_delete=models.CASCADE,
        related_name="notifications",
        verbose_name=_("price import"),
        null=True,
        blank=True,
    )
    alert = models.ForeignKey(
        "pricefeed.OverdueAlert",
        on_delete=models.CASCADE,
        related_name="notifications",
        verbose_name=_("overdue list alert"),
        null=True,
        blank=True,
    )
    recipient = models.EmailField(_("recipient"))
    # The import outcome a mail about an import tells (SUCCEEDED, PARTIAL, FAILED); "" for
    # other kinds.
    outcome = models.CharField(_("outcome"), max_length=20, blank=True, default="")
    # The language the mail is written in: its subscription's when the notification was
    # made ("" for those made before there were languages: the default one).
    language = models.CharField(_("language"), max_length=15, blank=True, default="")
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.PENDING)
    message_id = models.CharField(_("Message-ID"), max_length=255, blank=True)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    # The same as a msgid and its values (core.storedtext.Text), shown in the reader's
    # language; last_error holds its English, for logs, the API and search.
    last_error_text = models.JSONField(default=dict, db_default={}, blank=True, editable=False)
    created_at = models.DateTimeField(pgettext_lazy("notification", "created"), db_default=Now())
    sent_at = models.DateTimeField(pgettext_lazy("notification", "sent"), null=True, blank=True)
    # The outbox event that delivers it (a digest's delivers several): set in the
    # transaction that publishes the event. How a notification finds its event: by the
    # event's primary key, so that the outbox keeps no index of its own for it.
    send_event = models.UUIDField(_("send event"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        ordering = ["-created_at"]
        constraints = [
            # One per kind, subject, recipient and outcome (NULLS NOT DISTINCT: the
            # subject fields another kind uses are empty).
            models.UniqueConstraint(
                fields=["kind", "price_import", "alert", "recipient", "outcome"],
                nulls_distinct=False,
                name="one_notification_each",
            ),
            models.CheckConstraint(
                condition=models.Q(price_import__isnull=False, alert__isnull=True)
                | models.Q(price_import__isnull=True, alert__isnull=False),
                name="notification_has_one_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.outcome_label()} → {self.recipient} ({self.get_status_display()})"

    def outcome_label(self) -> str:
        """What the mail tells, in the active language: the import outcome as its status
        is named, or the kind's label."""
        if self.outcome:
            try:
                return str(PriceImport.Status(self.outcome).label)
            except ValueError:
                return self.outcome
        return kind_label(self.kind)


class DeliveryAttempt(models.Model):
    """One try at handing a notification's mail to the SMTP server, with the server's
    reply: what a notification refused twice and then sent went through, which its
    ``last_error`` (cleared on success) and ``attempts`` (a count) do not keep.

    Written in the transaction that records the attempt's outcome on the notification;
    at most ``KEPT`` per notification (the oldest go when a failure is recorded)."""

    KEPT = 20

    class Outcome(models.TextChoices):
        ACCEPTED = "ACCEPTED", _("accepted")
        REFUSED = "REFUSED", _("refused, to be retried")
        FAILED = "FAILED", _("refused, given up")

    notification = models.ForeignKey(
        Notification,
        on_delete=models.CASCADE,
        related_name="delivery_attempts",
        verbose_name=_("notification"),
    )
    at = models.DateTimeField(pgettext_lazy("delivery attempt", "at"), db_default=Now())
    outcome = models.CharField(_("outcome"), max_length=10, choices=Outcome)
    # The SMTP reply code ("" when there was none: no connection, another backend).
    code = models.CharField(_("code"), max_length=3, blank=True, default="")
    # The server's reply, or the error, as core.texts stores it (its values cut to 200
    # characters: a server's text is foreign input).
    reply = models.TextField(_("reply"), blank=True, default="")
    reply_text = models.JSONField(default=dict, blank=True, editable=False)

    class Meta:
        verbose_name = _("delivery attempt")
        verbose_name_plural = _("delivery attempts")
        ordering = ["notification", "pk"]

    def __str__(self) -> str:
        return f"{self.get_outcome_display()} {self.code}".strip()
