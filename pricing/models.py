"""Rates in roubles per unit of a currency, the log of the bank's fetches, and the terms
of each supplier (the surcharge on the rate, switched on, priority)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

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


def _text(value: Decimal | None) -> str | None:
    """A number as PostgreSQL writes it (numeric::text: every place of its scale, never
    an exponent)."""
    return None if value is None else f"{value:f}"


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
    stale_days = models.PositiveSmallIntegerField(
        _("a list is stale after, days"),
        default=14,
        validators=[
            MinValueValidator(1, _("A list stays current from 1 to 365 days.")),
            MaxValueValidator(365, _("A list stays current from 1 to 365 days.")),
        ],
        help_text=_("Offers of an older list do not count."),
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


# -- offers: a product's current offer per supplier and price type, the best one marked --

MAIN_PRICE = ""  # Offer.price_type of a config's main price (PriceItem.price)


class OfferRule(models.Model):
    """How the best offer of the products of a category is chosen, and by which price.
    The rule of the longest category prefix applies; without one, the cheapest in stock
    by the main price."""

    class Strategy(models.TextChoices):
        CHEAPEST = "cheapest", _("the cheapest in stock")
        PRIORITY = "priority", _("the supplier of the highest priority in stock")
        AVERAGE = "average", _("the average over suppliers in stock")

    category = models.TextField(
        _("category"),
        blank=True,
        unique=True,
        help_text=_(
            "The category path or its beginning (“Крепёж” covers “Крепёж / Болты”); "
            "empty: every category without a rule of its own."
        ),
    )
    strategy = models.CharField(
        _("how the best offer is chosen"),
        max_length=10,
        choices=Strategy.choices,
        default=Strategy.CHEAPEST,
    )
    price_type = models.CharField(
        _("price compared"),
        max_length=32,
        blank=True,
        help_text=_("A price type's code; empty: each supplier's main price."),
    )

    class Meta:
        verbose_name = _("offer rule")
        verbose_name_plural = _("offer rules")
        ordering = ["category"]

    def __str__(self) -> str:
        return self.category or str(_("every category"))


class PriceRule(models.Model):
    """How our selling price is made from the best offer's cost in roubles. The first
    enabled rule (by position) whose conditions all hold applies; an empty condition
    holds for every product."""

    class Rounding(models.TextChoices):
        NONE = "none", _("no rounding (kopecks)")
        TENTH = "0.1", _("up to 10 kopecks")
        ONE = "1", _("up to a rouble")
        TEN = "10", _("up to 10 roubles")
        END_90 = ".90", _("up to …,90")
        END_99 = ".99", _("up to …,99")

    name = models.CharField(pgettext_lazy("price rule", "name"), max_length=200)
    position = models.PositiveIntegerField(
        _("order"), default=100, help_text=_("Rules are tried from the smallest number.")
    )
    enabled = models.BooleanField(_("switched on"), default=True)
    config = models.ForeignKey(
        PriceListConfig,
        verbose_name=_("supplier"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text=_("Only offers of this supplier's list; empty: any supplier."),
    )
    category = models.TextField(
        _("category"), blank=True, help_text=_("The category path or its beginning.")
    )
    brand = models.CharField(_("brand"), max_length=255, blank=True)
    cost_from = models.DecimalField(
        _("cost from, roubles"), max_digits=18, decimal_places=2, null=True, blank=True
    )
    cost_below = models.DecimalField(
        _("cost below, roubles"), max_digits=18, decimal_places=2, null=True, blank=True
    )
    markup_percent = models.DecimalField(
        _("markup, percent"),
        max_digits=7,
        decimal_places=2,
        default=Decimal(0),
        validators=[
            MinValueValidator(Decimal(-99), _("A markup cannot take more than 99 percent off.")),
            MaxValueValidator(Decimal(10000), _("A markup cannot be above 10000 percent.")),
        ],
    )
    fixed_add = models.DecimalField(
        _("add, roubles"), max_digits=18, decimal_places=2, default=Decimal(0)
    )
    rounding = models.CharField(
        _("rounding"), max_length=4, choices=Rounding.choices, default=Rounding.NONE
    )
    min_margin_percent = models.DecimalField(
        _("minimum margin, percent"),
        max_digits=7,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0), _("The minimum margin cannot be negative."))],
        help_text=_("The floor: the price is never below the cost plus this margin."),
    )
    respect_rrp = models.BooleanField(
        _("not below the recommended price"),
        default=True,
        help_text=_("When the best offer's supplier sends a recommended retail price."),
    )
    rrp_type = models.CharField(
        _("recommended price type"),
        max_length=32,
        default="rrp",
        help_text=_("The code of the price type that holds the recommended retail price."),
    )
    hold_percent = models.DecimalField(
        _("hold a change above, percent"),
        max_digits=7,
        decimal_places=2,
        null=True,
        blank=True,
        default=Decimal(25),
        validators=[MinValueValidator(Decimal(0), _("The share cannot be negative."))],
        help_text=_(
            "A price that moves more than this since the last published one waits for "
            "approval; empty: never held."
        ),
    )
    updated_at = models.DateTimeField(_("changed at"), auto_now=True)

    class Meta:
        verbose_name = _("price rule")
        verbose_name_plural = _("price rules")
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(markup_percent__gt=-100), name="pricing_rule_markup"
            ),
            models.CheckConstraint(
                condition=models.Q(cost_from__isnull=True)
                | models.Q(cost_below__isnull=True)
                | models.Q(cost_from__lt=models.F("cost_below")),
                name="pricing_rule_band",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Offer(models.Model):
    """A supplier's current offer of one of our products in one price type: the linked
    line's price as sent, in roubles at the list's date, its stock, and whether it takes
    part (``status``). The best offer of each product is marked, with why (``reason``).
    Kept by pricing.offers; never edited by hand."""

    class Status(models.TextChoices):
        OK = "ok", pgettext_lazy("offer", "counts")
        STALE = "stale", pgettext_lazy("offer", "the list is too old")
        DISABLED = "disabled", pgettext_lazy("offer", "the supplier is switched off")
        NO_RATE = "no_rate", pgettext_lazy("offer", "no rate for the currency")
        NO_PRICE = "no_price", pgettext_lazy("offer", "no price in the list")

    product = models.ForeignKey(
        "products.Product",
        verbose_name=_("product"),
        on_delete=models.CASCADE,
        db_constraint=False,
        db_index=False,  # the unique (product, config, price_type) serves
        related_name="offers",
    )
    config = models.ForeignKey(
        PriceListConfig,
        verbose_name=_("supplier"),
        on_delete=models.CASCADE,
        db_constraint=False,
        related_name="+",
    )
    price_type = models.CharField(_("price type"), max_length=32, blank=True)
    sku = models.CharField(_("supplier's code"), max_length=255)
    price = models.DecimalField(_("price"), max_digits=18, decimal_places=4, null=True)
    currency = models.CharField(_("currency"), max_length=10, blank=True)
    price_rub = models.DecimalField(
        _("price in roubles"), max_digits=18, decimal_places=4, null=True
    )
    rate = models.DecimalField(
        _("rate with the surcharge"), max_digits=18, decimal_places=8, null=True
    )
    rate_date = models.DateField(_("rate of"), null=True)
    quantity = models.DecimalField(_("quantity"), max_digits=18, decimal_places=4, null=True)
    in_stock = models.BooleanField(_("in stock"))
    list_date = models.DateTimeField(_("list of"), null=True)
    entry_id = models.BigIntegerField(_("catalogue entry"), null=True)
    status = models.CharField(_("status"), max_length=8, choices=Status.choices)
    best = models.BooleanField(_("best"), default=False)
    reason = models.JSONField(_("why it is the best"), default=dict)
    updated_at = models.DateTimeField(_("computed at"), db_default=Now())

    class Meta:
        verbose_name = _("offer")
        verbose_name_plural = _("offers")
        ordering = ["product", "price_type", "price_rub"]
        constraints = [
            models.UniqueConstraint(
                fields=["product", "config", "price_type"], name="pricing_offer_one"
            )
        ]
        # No index on the best mark: a refresh moves it between a product's offers,
        # and an index on it made every such move a new row version with an entry in
        # each index (a product's few offers are found by pricing_offer_one).
        indexes = [
            # The stale sweep's question: does a config have offers that count?
            models.Index(
                fields=["config"], name="pricing_offer_counting", condition=models.Q(status="ok")
            ),
            # The front page's count of offers waiting for a rate.
            models.Index(
                fields=["currency"],
                name="pricing_offer_no_rate",
                condition=models.Q(status="no_rate"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.config_id}:{self.sku} {self.price} {self.currency}"


class ProductPrice(models.Model):
    """Our selling price of a product in roubles: the published one (what feeds and
    events carry) and the last computed one with its audit. A computed price that moves
    more than its rule's share from the published one is held until approved."""

    class Status(models.TextChoices):
        PUBLISHED = "published", pgettext_lazy("product price", "published")
        HELD = "held", pgettext_lazy("product price", "held for approval")
        NO_OFFER = "no_offer", pgettext_lazy("product price", "no offer counts")
        NO_RULE = "no_rule", pgettext_lazy("product price", "no price rule applies")

    product = models.OneToOneField(
        "products.Product",
        verbose_name=_("product"),
        primary_key=True,
        on_delete=models.CASCADE,
        db_constraint=False,
        related_name="selling_price",
    )
    status = models.CharField(_("status"), max_length=9, choices=Status.choices)
    price = models.DecimalField(_("published price"), max_digits=18, decimal_places=2, null=True)
    published_at = models.DateTimeField(_("published at"), null=True)
    computed = models.DecimalField(_("computed price"), max_digits=18, decimal_places=2, null=True)
    cost = models.DecimalField(_("cost, roubles"), max_digits=18, decimal_places=4, null=True)
    available = models.BooleanField(_("available"), default=False)
    quantity = models.DecimalField(_("quantity"), max_digits=18, decimal_places=4, null=True)
    # Not indexed: a refresh that moves a product to another supplier or rule then
    # updates its price in place (a HOT update, no index touched); removing a supplier
    # or a rule, rare, reads the prices through.
    config = models.ForeignKey(
        PriceListConfig,
        verbose_name=_("supplier of the best offer"),
        null=True,
        on_delete=models.SET_NULL,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    rule = models.ForeignKey(
        PriceRule,
        verbose_name=_("price rule"),
        null=True,
        on_delete=models.SET_NULL,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    # The audit, as typed columns (a row under half as wide as with the audit as JSON; the
    # property ``audit`` tells it as before): the choice of the best offer (its offer
    # rule's reason, as Offer.reason), the best offer as it was read ...
    choice = models.JSONField(_("choice of the best offer"), default=dict)
    offer_sku = models.CharField(_("best offer's code"), max_length=255, blank=True)
    offer_price_type = models.CharField(_("best offer's price type"), max_length=32, blank=True)
    offer_price = models.DecimalField(
        _("best offer's price"), max_digits=18, decimal_places=4, null=True
    )
    offer_currency = models.CharField(_("best offer's currency"), max_length=10, blank=True)
    offer_rate = models.DecimalField(
        _("best offer's rate"), max_digits=18, decimal_places=8, null=True
    )
    offer_rate_date = models.DateField(_("best offer's rate date"), null=True)
    offer_price_rub = models.DecimalField(
        _("best offer's price in roubles"), max_digits=18, decimal_places=4, null=True
    )
    # ... and the rule's steps, each a setting and the price after it: the markup, the
    # fixed add (where not 0), the floor (where it raised the price), the rounding, the
    # recommended price (where it raised it); and the hold, where held. (The steps'
    # prices are wider than the price's own: a step never fails the write.)
    rule_name = models.CharField(_("price rule's name"), max_length=200, blank=True)
    markup_percent = models.DecimalField(
        _("markup, percent"), max_digits=7, decimal_places=2, null=True
    )
    marked = models.DecimalField(
        _("price after the markup"), max_digits=24, decimal_places=4, null=True
    )
    fixed_add = models.DecimalField(_("add, roubles"), max_digits=18, decimal_places=2, null=True)
    added = models.DecimalField(
        _("price after the add"), max_digits=24, decimal_places=4, null=True
    )
    min_margin_percent = models.DecimalField(
        _("minimum margin, percent"), max_digits=7, decimal_places=2, null=True
    )
    floor = models.DecimalField(_("floor"), max_digits=24, decimal_places=4, null=True)
    rounding = models.CharField(_("rounding"), max_length=4, blank=True)
    rounded = models.DecimalField(_("rounded price"), max_digits=24, decimal_places=2, null=True)
    rrp = models.DecimalField(
        _("recommended price, roubles"), max_digits=18, decimal_places=4, null=True
    )
    held_from = models.DecimalField(
        _("published price it was held against"), max_digits=18, decimal_places=2, null=True
    )
    hold_percent = models.DecimalField(
        _("hold a change above, percent"), max_digits=7, decimal_places=2, null=True
    )
    computed_at = models.DateTimeField(_("computed at"), db_default=Now())
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("approved by"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        verbose_name = _("selling price")
        verbose_name_plural = _("selling prices")
        permissions = [("approve_productprice", _("Can approve a held selling price"))]
        indexes = [
            models.Index(
                fields=["status"],
                name="pricing_price_held",
                condition=models.Q(status="held"),
            )
        ]

    def __str__(self) -> str:
        return f"{self.product_id}: {self.price}"

    @property
    def audit(self) -> dict[str, Any]:
        """How the price was computed, as pricing.audit.explain reads it (the numbers as
        PostgreSQL writes them): the choice; the best offer and the cost; the rule, its
        steps and the price; why it is held; who approved it."""
        if not self.choice:
            return {}
        told: dict[str, Any] = {"choice": self.choice}
        if self.cost is None:
            return told
        told["offer"] = {
            "config_id": self.config_id,
            "sku": self.offer_sku,
            "price_type": self.offer_price_type,
            "price": _text(self.offer_price),
            "currency": self.offer_currency,
            "rate": _text(self.offer_rate),
            "rate_date": self.offer_rate_date.isoformat() if self.offer_rate_date else None,
            "price_rub": _text(self.offer_price_rub),
        }
        told["cost"] = _text(self.cost)
        if self.rule_id is None:
            return told
        steps = [
            ["cost", "", _text(self.cost)],
            ["markup", _text(self.markup_percent), _text(self.marked)],
        ]
        if self.added is not None:
            steps.append(["add", _text(self.fixed_add), _text(self.added)])
        if self.floor is not None:
            steps.append(["floor", _text(self.min_margin_percent), _text(self.floor)])
        steps.append(["round", self.rounding, _text(self.rounded)])
        if self.rrp is not None:
            steps.append(["rrp", _text(self.rrp), _text(self.computed)])
        told.update(
            rule={"id": self.rule_id, "name": self.rule_name},
            steps=steps,
            price=_text(self.computed),
        )
        if self.hold_percent is not None:
            told["held"] = {
                "published": _text(self.held_from),
                "hold_percent": _text(self.hold_percent),
            }
        if self.approved_by is not None:
            told["approved_by"] = self.approved_by.get_username()
        return told


class PublishedVersion(models.Model):
    """One row: a number raised in the transaction of every change to published prices
    (feeds' ETag, customer lists' version), and when it last changed."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    number = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = _("published prices' version")
        verbose_name_plural = _("published prices' versions")
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="pricing_version_one")]

    def __str__(self) -> str:
        return str(self.number)
