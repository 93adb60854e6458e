"""Rates in roubles per unit of a currency, the log of the bank's fetches, and the terms
of each supplier (the surcharge on the rate, switched on, priority)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from pricefeed.models import PriceListConfig

CURRENCY_CODE = RegexValidator(
    r"^[A-Z]{3}\Z", _("Enter a currency's ISO 4217 code: three capital Latin letters.")
)


class Rate(models.Model):
    """Roubles per ONE unit of a currency (the bank's Value / Nominal), in effect from
    ``date``: the bank's (``cbr``) or entered by hand (``manual``), one of each per
    currency and date. A manual rate wins over the bank's for the same date
    (pricing.selectors.rate_on)."""

    class Source(models.TextChoices):
        CBR = "cbr", pgettext_lazy("rate source", "Bank of Russia")
        MANUAL = "manual", pgettext_lazy("rate source", "manual")

    currency = models.CharField(_("currency"), max_length=3, validators=[CURRENCY_CODE])
    date = models.DateField(_("in effect from"))
    rate = models.DecimalField(
        _("roubles per unit"),
        max_digits=18,
        decimal_places=8,
        validators=[MinValueValidator(Decimal("0.00000001"), _("A rate must be above zero."))],
    )
    source = models.CharField(
        _("source"), max_length=6, choices=Source.choices, default=Source.MANUAL
    )
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("entered by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(_("fetched or entered"), db_default=Now())

    class Meta:
        verbose_name = _("rate")
        verbose_name_plural = _("rates")
        ordering = ["-date", "currency", "source"]
        constraints = [
            models.UniqueConstraint(
                fields=["currency", "date", "source"], name="pricing_rate_one_per_source"
            ),
            models.CheckConstraint(condition=models.Q(rate__gt=0), name="pricing_rate_positive"),
            models.CheckConstraint(
                condition=models.Q(currency__regex=r"^[A-Z]{3}$"), name="pricing_rate_code"
            ),
            models.CheckConstraint(
                condition=models.Q(source__in=["cbr", "manual"]), name="pricing_rate_source"
            ),
        ]
        indexes = [models.Index(fields=["currency", "-date"], name="pricing_rate_lookup")]

    def __str__(self) -> str:
        return f"{self.currency} {self.date:%d.%m.%Y} {self.rate}"


class RateFetch(models.Model):
    """The bank's rates for one day, asked for by the sweep (today's and tomorrow's) or
    ``rates_fetch``: the last outcome, shown in the admin, and when to ask again (after
    a failure, with backoff; for tomorrow, until the bank has set them)."""

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("rate fetch", "waiting")
        DONE = "done", pgettext_lazy("rate fetch", "received")
        FAILED = "failed", pgettext_lazy("rate fetch", "failed, will retry")

    class Problem(models.TextChoices):
        UNREACHABLE = "unreachable", _("the bank's server could not be reached")
        TIMEOUT = "timeout", _("the bank's server did not answer in time")
        STATUS = "status", _("the bank's server answered with an error")
        TOO_LARGE = "too_large", _("the answer is larger than a day's rates can be")
        MALFORMED = "malformed", _("the answer is not the bank's XML_daily document")
        PLAIN = "plain", _("the rates' URL is not HTTPS")

    date = models.DateField(_("rates for"), unique=True)
    status = models.CharField(
        _("status"), max_length=8, choices=Status.choices, default=Status.PENDING
    )
    effective = models.DateField(_("rates in effect from"), null=True, blank=True)
    rates = models.PositiveIntegerField(_("currencies"), default=0)
    attempts = models.PositiveIntegerField(_("failed attempts"), default=0)
    problem = models.CharField(_("error"), max_length=12, choices=Problem.choices, blank=True)
    detail = models.CharField(_("details"), max_length=200, blank=True)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    updated_at = models.DateTimeField(_("last attempt"), db_default=Now())

    class Meta:
        verbose_name = _("rate fetch")
        verbose_name_plural = _("rate fetches")
        ordering = ["-date"]

    def __str__(self) -> str:
        return f"{self.date:%d.%m.%Y}"


class SupplierTerms(models.Model):
    """A supplier's terms, per price-list config: the surcharge on the bank's rate ("ЦБ
    + 2 %"), whether its offers count, and its priority (1 first) when a rule prefers
    suppliers by it."""

    config = models.OneToOneField(
        PriceListConfig,
        verbose_name=_("price-list config"),
        on_delete=models.CASCADE,
        related_name="terms",
    )
    rate_surcharge = models.DecimalField(
        _("surcharge on the rate, percent"),
        max_digits=5,
        decimal_places=2,
        default=Decimal(0),
        validators=[
            MinValueValidator(Decimal(0), _("The surcharge cannot be below zero.")),
            MaxValueValidator(Decimal(100), _("The surcharge cannot be above 100 percent.")),
        ],
        help_text=_("Added to the bank's rate: 2 makes a rate of 100 roubles 102."),
    )
    enabled = models.BooleanField(_("switched on"), default=True)
    priority = models.PositiveSmallIntegerField(
        _("priority"),
        default=100,
        validators=[
            MinValueValidator(1, _("The priority is a number from 1 to 1000.")),
            MaxValueValidator(1000, _("The priority is a number from 1 to 1000.")),
        ],
        help_text=_("1 comes first."),
    )

    class Meta:
        verbose_name = _("supplier's terms")
        verbose_name_plural = _("suppliers' terms")
        ordering = ["priority", "config__name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(rate_surcharge__gte=0, rate_surcharge__lte=100),
                name="pricing_terms_surcharge",
            ),
            models.CheckConstraint(
                condition=models.Q(priority__gte=1, priority__lte=1000),
                name="pricing_terms_priority",
            ),
        ]

    def __str__(self) -> str:
        return str(self.config)
