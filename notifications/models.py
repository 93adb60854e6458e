from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Now
from django.utils import translation
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from pricefeed.models import PriceImport


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


# The kind of a subscription's mail about a list that did not come (pricefeed.overdue);
# the other kinds are import outcomes, named by PriceImport.Status.
LIST_OVERDUE = "OVERDUE"


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

    def wants(self, status: str) -> bool:
        wanted: dict[str, bool] = {
            PriceImport.Status.SUCCEEDED: self.on_succeeded,
            PriceImport.Status.PARTIAL: self.on_partial,
            PriceImport.Status.FAILED: self.on_failed,
            LIST_OVERDUE: self.on_overdue,
        }
        return wanted.get(status, False)


class Notification(models.Model):
    """One e-mail about one import to one recipient: takes effect once, whatever retries."""

    class Status(models.TextChoices):
        PENDING = "PENDING", _("Pending")
        SENT = "SENT", _("Sent")
        FAILED = "FAILED", _("Failed")

    price_import = models.ForeignKey(
        "pricefeed.PriceImport",
        on_delete=models.CASCADE,
        related_name="notifications",
        verbose_name=_("price import"),
    )
    recipient = models.EmailField(_("recipient"))
    # The import outcome: SUCCEEDED, PARTIAL, FAILED.
    kind = models.CharField(_("outcome"), max_length=20)
    # The language the mail is written in: its subscription's when the notification was
    # made ("" for those made before there were languages: the default one).
    language = models.CharField(_("language"), max_length=15, blank=True, default="")
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.PENDING)
    message_id = models.CharField(_("Message-ID"), max_length=255, blank=True)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
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
            models.UniqueConstraint(
                fields=["price_import", "recipient", "kind"], name="one_notification_each"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.outcome_label()} → {self.recipient} ({self.get_status_display()})"

    def outcome_label(self) -> str:
        """The import outcome as its status is named in the active language (the stored
        value itself when it is no import status)."""
        try:
            return str(PriceImport.Status(self.kind).label)
        except ValueError:
            return self.kind


class OverdueNotification(models.Model):
    """One e-mail about one overdue-list alert to one recipient: takes effect once,
    whatever retries. A model of its own rather than a Notification: there is no import
    to hang it on, and Notification stays one per (price_import, recipient, kind)."""

    Status = Notification.Status

    alert = models.ForeignKey(
        "pricefeed.OverdueAlert",
        on_delete=models.CASCADE,
        related_name="notifications",
        verbose_name=_("overdue list alert"),
    )
    recipient = models.EmailField(_("recipient"))
    language = models.CharField(_("language"), max_length=15, blank=True, default="")
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.PENDING)
    message_id = models.CharField(_("Message-ID"), max_length=255, blank=True)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    created_at = models.DateTimeField(pgettext_lazy("notification", "created"), db_default=Now())
    sent_at = models.DateTimeField(pgettext_lazy("notification", "sent"), null=True, blank=True)
    # The outbox event that delivers it, as for Notification.
    send_event = models.UUIDField(_("send event"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("overdue-list notification")
        verbose_name_plural = _("overdue-list notifications")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "recipient"], name="one_overdue_notification_each"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.alert} → {self.recipient} ({self.get_status_display()})"
