"""Rates, the bank's fetches and suppliers' terms in the admin.

The bank's rates and the fetch log are the machinery's records: read-only to everyone.
A manual rate is added and changed with the rate permissions (operators, access.roles):
its source is manual and who entered it is the user saving it.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _

from core.adminutils import ListAdminMixin, truncated, when

from .models import Rate, RateFetch, SupplierTerms


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
class SupplierTermsAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = ["config", "rate_surcharge", "enabled", "priority"]
    list_editable = ["enabled", "priority"]
    list_filter = ["enabled"]
    search_fields = ["config__name"]
    autocomplete_fields = ["config"]
    list_select_related = ["config"]
