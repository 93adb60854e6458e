"""Rates, the bank's fetches and suppliers' terms in the admin.

The bank's rates and the fetch log are the machinery's records: read-only to everyone.
A manual rate is added and changed with the rate permissions (operators, access.roles):
its source is manual and who entered it is the user saving it.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.formats import date_format, number_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from core.adminutils import ListAdminMixin, truncated, when
from pricefeed.models import PriceType

from . import audit, offers
from .models import Offer, OfferRule, PriceRule, ProductPrice, Rate, RateFetch, SupplierTerms


class RefreshOnSaveMixin:
    """A change of what prices are made by (rules, suppliers' terms) asks, in the same
    transaction, for every offer and price to be computed again."""

    refresh_reason = "rules"

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)  # type: ignore[misc]
        offers.refresh_requested(self.refresh_reason)

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)  # type: ignore[misc]
        offers.refresh_requested(self.refresh_reason)

    def delete_queryset(self, request, queryset) -> None:
        super().delete_queryset(request, queryset)  # type: ignore[misc]
        offers.refresh_requested(self.refresh_reason)


class ManualRateForm(forms.ModelForm):
    """A manual rate: one per currency and date (the database's constraint names the
    source too, which the form does not show, so Django would not check it)."""

    class Meta:
        model = Rate
        fields = ["currency", "date", "rate"]

    def clean(self):
        cleaned = super().clean() or {}
        currency, day = cleaned.get("currency"), cleaned.get("date")
        if currency and day:
            taken = Rate.objects.filter(currency=currency, date=day, source=Rate.Source.MANUAL)
            if taken.exclude(pk=self.instance.pk).exists():
                raise ValidationError(
                    _("A manual rate of %(currency)s on %(date)s is already entered."),
                    code="taken",
                    params={"currency": currency, "date": date_format(day, "d.m.Y")},
                )
        return cleaned


@admin.register(Rate)
class RateAdmin(ListAdminMixin, admin.ModelAdmin):
    form = ManualRateForm
    list_display = ["currency", "date", "rate", "source", "entered_by", "entered"]
    list_filter = ["source", "currency", "date"]
    search_fields = ["currency"]
    date_hierarchy = "date"
    fields = ["currency", "date", "rate", "source", "entered_by", "created_at"]
    readonly_fields = ["source", "entered_by", "created_at"]
    list_select_related = ["entered_by"]

    @admin.display(description=_("fetched or entered"), ordering="created_at")
    def entered(self, obj: Rate):
        return when(obj.created_at)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ["source", "entered_by"]
        return super().get_readonly_fields(request, obj)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["currency", "date", "rate"]
        return super().get_fields(request, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.source == Rate.Source.CBR:
            return False  # the bank's, as fetched
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.source == Rate.Source.CBR:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj: Rate, form, change) -> None:
        obj.source = Rate.Source.MANUAL
        obj.entered_by = request.user
        super().save_model(request, obj, form, change)
        offers.refresh_requested("rates")


@admin.register(RateFetch)
class RateFetchAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = ["date", "status", "effective", "rates", "attempts", "error", "next_attempt"]
    list_filter = ["status", "problem"]
    date_hierarchy = "date"

    @admin.display(description=_("error"))
    def error(self, obj: RateFetch):
        if not obj.problem:
            return truncated("")
        label = RateFetch.Problem(obj.problem).label
        return truncated(f"{label}: {obj.detail}" if obj.detail else label, error=True)

    @admin.display(description=_("next attempt"), ordering="next_attempt_at")
    def next_attempt(self, obj: RateFetch):
        return when(obj.next_attempt_at)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SupplierTerms)
class SupplierTermsAdmin(RefreshOnSaveMixin, ListAdminMixin, admin.ModelAdmin):
    refresh_reason = "terms"
    list_display = ["config", "rate_surcharge", "enabled", "priority", "stale_days"]
    list_editable = ["enabled", "priority"]
    list_filter = ["enabled"]
    search_fields = ["config__name"]
    autocomplete_fields = ["config"]
    list_select_related = ["config"]


# -- offers, rules and our prices -------------------------------------------------------


@admin.register(OfferRule)
class OfferRuleAdmin(RefreshOnSaveMixin, ListAdminMixin, admin.ModelAdmin):
    list_display = ["rule_category", "strategy", "price_type"]
    search_fields = ["category"]

    @admin.display(description=_("category"), ordering="category")
    def rule_category(self, obj: OfferRule):
        return str(obj)


@admin.register(PriceRule)
class PriceRuleAdmin(RefreshOnSaveMixin, ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "name", "position", "enabled", "config", "category", "brand", "band",
        "markup_percent", "fixed_add", "rounding", "min_margin_percent", "respect_rrp",
        "hold_percent",
    ]  # fmt: skip
    list_filter = ["enabled", "rounding", "respect_rrp"]
    search_fields = ["name", "category", "brand"]
    autocomplete_fields = ["config"]
    list_select_related = ["config"]
    fieldsets = [
        (None, {"fields": ["name", "position", "enabled"]}),
        (
            _("Which products"),
            {"fields": ["config", "category", "brand", "cost_from", "cost_below"]},
        ),
        (
            _("How the price is made"),
            {
                "fields": [
                    "markup_percent",
                    "fixed_add",
                    "min_margin_percent",
                    "rounding",
                    "respect_rrp",
                    "rrp_type",
                    "hold_percent",
                ]
            },
        ),
    ]

    @admin.display(description=_("cost band, roubles"))
    def band(self, obj: PriceRule):
        if obj.cost_from is None and obj.cost_below is None:
            return "—"
        low = "" if obj.cost_from is None else obj.cost_from
        high = "" if obj.cost_below is None else obj.cost_below
        return f"{low} … {high}"


@admin.register(Offer)
class OfferAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "product", "config", "price_type", "price", "currency", "price_rub", "in_stock",
        "quantity", "status", "best", "listed",
    ]  # fmt: skip
    list_filter = ["status", "best", "in_stock", "config"]
    search_fields = ["product__own_code", "product__name", "sku"]
    list_select_related = ["product", "config"]
    show_full_result_count = False

    @admin.display(description=_("list of"), ordering="list_date")
    def listed(self, obj: Offer):
        return when(obj.list_date)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ProductPrice)
class ProductPriceAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "product", "status", "price", "computed", "change", "cost", "available", "config",
        "rule", "computed_when",
    ]  # fmt: skip
    list_filter = ["status", "available", "rule"]
    search_fields = ["product__own_code", "product__name"]
    list_select_related = ["product", "config", "rule"]
    show_full_result_count = False
    actions = ["approve"]
    readonly_fields = [
        "product", "status", "price", "published_at", "computed", "cost", "available",
        "quantity", "config", "rule", "explanation", "offers_table", "computed_at",
        "approved_by",
    ]  # fmt: skip
    fields = tuple(readonly_fields)

    @admin.display(description=_("change"))
    def change(self, obj: ProductPrice):
        if obj.price is None or obj.computed is None or obj.price == 0:
            return "—"
        return f"{(obj.computed - obj.price) * 100 / obj.price:+.1f} %"

    @admin.display(description=_("computed at"), ordering="computed_at")
    def computed_when(self, obj: ProductPrice):
        return when(obj.computed_at)

    @admin.display(description=_("how it was computed"))
    def explanation(self, obj: ProductPrice):
        supplier = obj.config.name if obj.config_id and obj.config else ""
        lines = audit.explain(obj.audit, supplier=supplier)
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))

    @admin.display(description=_("offers"))
    def offers_table(self, obj: ProductPrice):
        """Every supplier's offer of the product: price as sent, in roubles, stock, whether
        it counts, the best one marked."""
        rows = Offer.objects.filter(product_id=obj.product_id).select_related("config")
        head = format_html(
            "<tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr>",
            _("supplier"), _("price type"), _("price"), _("price in roubles"), _("in stock"),
            _("status"), _("best"),
        )  # fmt: skip
        types = dict(PriceType.objects.values_list("code", "name"))
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td>"
            "<td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    offer.config.name,
                    types.get(offer.price_type, offer.price_type) or _("main"),
                    "—"
                    if offer.price is None
                    else number_format(offer.price, 2, force_grouping=True),
                    offer.currency,
                    "—"
                    if offer.price_rub is None
                    else number_format(offer.price_rub, 2, force_grouping=True),
                    _("yes") if offer.in_stock else _("no"),
                    offer.get_status_display(),
                    "★" if offer.best else "",
                )
                for offer in rows.order_by("price_type", "price_rub", "config__name")
            ),
        )
        return format_html('<table class="pf-offers">{}{}</table>', head, body)

    @admin.action(description=_("Approve the held prices"), permissions=["approve"])
    def approve(self, request, queryset):
        approved = skipped = 0
        for price in queryset.filter(status=ProductPrice.Status.HELD):
            try:
                offers.price_approve(price.product_id, computed=price.computed, user=request.user)
                approved += 1
            except offers.NotHeld:
                skipped += 1
        skipped += queryset.exclude(status=ProductPrice.Status.HELD).count()
        self.message_user(
            request,
            ngettext(
                "%(count)d price approved and published.",
                "%(count)d prices approved and published.",
                approved,
            )
            % {"count": approved},
            messages.SUCCESS,
        )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "%(count)d price was not held (any more) and is left as it is.",
                    "%(count)d prices were not held (any more) and are left as they are.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )

    def has_approve_permission(self, request) -> bool:
        return request.user.has_perm("pricing.approve_productprice")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
