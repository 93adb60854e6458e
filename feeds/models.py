"""Feeds of our published prices and customer price lists.

A ``Feed`` is one URL (``/feeds/<token>/``) serving our published prices in one format;
its token is shown once and stored as its SHA-256 only. A ``CustomerGroup`` is a set of
customers who get our prices with their adjustment (a discount or a surcharge), in a
file mailed on a schedule; a ``CustomerMailing`` is that file sent to one recipient for
one published version, once.
"""

from __future__ import annotations

from decimal import Decimal

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, validate_email
from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class Weekday(models.IntegerChoices):
    MONDAY = 1, _("Monday")
    TUESDAY = 2, _("Tuesday")
    WEDNESDAY = 3, _("Wednesday")
    THURSDAY = 4, _("Thursday")
    FRIDAY = 5, _("Friday")
    SATURDAY = 6, _("Saturday")
    SUNDAY = 7, _("Sunday")


def recipient_list(text: str) -> list[str]:
    """The addresses in ``text``: separated by commas, semicolons, spaces or lines."""
    for separator in ",;\n\r\t":
        text = text.replace(separator, " ")
    return [part for part in text.split(" ") if part]


def validate_recipients(text: str) -> None:
    addresses = recipient_list(text)
    if not addresses:
        raise ValidationError(_("Name at least one e-mail address."), code="empty")
    bad = []
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            bad.append(address)
    if bad:
        raise ValidationError(
            _("Not an e-mail address: %(addresses)s"),
            code="invalid",
            params={"addresses": ", ".join(bad[:5])},
        )


class CustomerGroup(models.Model):
    """Customers who get our published prices with an adjustment, mailed as a file on
    a schedule (days of the week and a time of day, Moscow time)."""

    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        XLSX = "xlsx", "xlsx"

    name = models.CharField(pgettext_lazy("customer group", "name"), max_length=200, unique=True)
    adjustment_percent = models.DecimalField(
        _("price adjustment, %"),
        max_digits=6,
        decimal_places=2,
        default=Decimal(0),
        validators=[MinValueValidator(Decimal(-99)), MaxValueValidator(Decimal(1000))],
        help_text=_(
            "Added to our published price: -5 is a 5 % discount, 10 a 10 % surcharge. "
            "The result is rounded to kopecks."
        ),
    )
    format = models.CharField(
        _("file format"), max_length=4, choices=Format.choices, default=Format.XLSX
    )
    recipients = models.TextField(
        _("recipients"),
        validators=[validate_recipients],
        help_text=_("E-mail addresses, separated by commas or on lines of their own."),
    )
    days = ArrayField(
        models.PositiveSmallIntegerField(choices=Weekday.choices),
        verbose_name=_("days of the week"),
        default=list,
    )
    time = models.TimeField(_("time of day (Moscow)"))
    enabled = models.BooleanField(_("switched on"), default=True)
    # The last scheduled moment the sweep has served (whether or not a list went out).
    served_until = models.DateTimeField(_("last scheduled moment served"), null=True, blank=True)
    updated_at = models.DateTimeField(pgettext_lazy("customer group", "changed at"), auto_now=True)

    class Meta:
        verbose_name = _("customer group")
        verbose_name_plural = _("customer groups")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def recipient_list(self) -> list[str]:
        return list(dict.fromkeys(a.lower() for a in recipient_list(self.recipients)))


class Feed(models.Model):
    """One feed of our published prices at ``/feeds/<token>/``."""

    class Format(models.TextChoices):
        YML = "yml", _("Yandex YML")
        CML = "cml", _("CommerceML 2 (offers package)")
        CSV = "csv", "CSV"
        XLSX = "xlsx", "xlsx"

    name = models.CharField(pgettext_lazy("feed", "name"), max_length=200)
    format = models.CharField(_("format"), max_length=4, choices=Format.choices)
    enabled = models.BooleanField(_("switched on"), default=True)
    shop_name = models.CharField(
        _("shop name"),
        max_length=200,
        blank=True,
        help_text=_("For YML: the shop's name (the feed's name when empty)."),
    )
    company = models.CharField(
        _("company"), max_length=200, blank=True, help_text=_("For YML: the company's full name.")
    )
    shop_url = models.URLField(
        _("shop URL"), blank=True, help_text=_("For YML: the shop's address.")
    )
    customer_group = models.ForeignKey(
        CustomerGroup,
        verbose_name=_("customer group"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="feeds",
        help_text=_("When set, the group's price adjustment applies to the feed's prices."),
    )
    # SHA-256 (hex) of the token: the token itself is shown once and never stored. NULL
    # before the first token (unique: several "" would collide).
    token_hash = models.CharField(  # noqa: DJ001
        max_length=64, unique=True, null=True, editable=False
    )
    token_issued_at = models.DateTimeField(_("token issued at"), null=True, editable=False)
    created_at = models.DateTimeField(pgettext_lazy("feed", "created"), db_default=Now())
    updated_at = models.DateTimeField(pgettext_lazy("feed", "changed at"), auto_now=True)

    class Meta:
        verbose_name = _("feed")
        verbose_name_plural = _("feeds")
        ordering = ["name"]
        permissions = [("renew_token_feed", _("Can issue a new token of a feed"))]

    def __str__(self) -> str:
        return self.name


class CustomerListRun(models.Model):
    """A customer group's list of one published version, handed to the outbox once."""

    group = models.ForeignKey(
        CustomerGroup,
        on_delete=models.CASCADE,
        related_name="runs",
        verbose_name=_("customer group"),
    )
    version = models.BigIntegerField(_("published version"))
    created_at = models.DateTimeField(pgettext_lazy("customer list", "made at"), db_default=Now())

    class Meta:
        verbose_name = _("customer list")
        verbose_name_plural = _("customer lists")
        constraints = [
            models.UniqueConstraint(fields=["group", "version"], name="feeds_one_run_per_version")
        ]

    def __str__(self) -> str:
        return f"{self.group_id}: {self.version}"


class CustomerMailing(models.Model):
    """A customer group's list of one published version mailed to one recipient: takes
    effect once, whatever retries (Message-ID from the row's id)."""

    class Status(models.TextChoices):
        PENDING = "PENDING", _("Pending")
        SENT = "SENT", _("Sent")
        FAILED = "FAILED", _("Failed")

    group = models.ForeignKey(
        CustomerGroup,
        on_delete=models.CASCADE,
        related_name="mailings",
        verbose_name=_("customer group"),
    )
    recipient = models.EmailField(_("recipient"))
    version = models.BigIntegerField(_("published version"))
    status = models.CharField(
        _("status"), max_length=8, choices=Status.choices, default=Status.PENDING
    )
    message_id = models.CharField(_("Message-ID"), max_length=255, blank=True)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    rows = models.PositiveIntegerField(_("products in the file"), null=True)
    # Set while a worker sends it (a conditional UPDATE): a second worker with the same
    # event (the outbox delivers at least once) leaves it alone until the claim expires.
    claimed_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(pgettext_lazy("mailing", "created"), db_default=Now())
    sent_at = models.DateTimeField(pgettext_lazy("mailing", "sent"), null=True, blank=True)

    class Meta:
        verbose_name = _("customer list mailing")
        verbose_name_plural = _("customer list mailings")
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["group", "recipient", "version"], name="feeds_one_mailing_each"
            )
        ]

    def __str__(self) -> str:
        return f"{self.recipient} ({self.version})"
