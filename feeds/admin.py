"""Feeds, customer groups and their mailings in the admin.

A feed's token is made when the feed is added and with the *new token* action (its own
permission): the full URL is shown to the operator that once, in the page's message;
only its SHA-256 is kept.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.adminutils import ListAdminMixin, when

from .models import CustomerGroup, CustomerMailing, Feed, Weekday
from .tokens import feed_token_renew


def _announce(request, feed: Feed, token: str) -> None:
    url = request.build_absolute_uri(reverse("feeds:feed", args=[token]))
    messages.warning(
        request,
        _(
            'The URL of the feed "%(feed)s": %(url)s - copy it now, it is shown only '
            "once (a new token makes the old URL stop working)."
        )
        % {"feed": feed.name, "url": url},
    )


@admin.register(Feed)
class FeedAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = ["name", "format", "enabled", "customer_group", "issued", "updated"]
    list_filter = ["format", "enabled"]
    search_fields = ["name"]
    fields = [
        "name",
        "format",
        "enabled",
        "customer_group",
        "shop_name",
        "company",
        "shop_url",
        "token_issued_at",
    ]
    readonly_fields = ["token_issued_at"]
    actions = ["new_token"]

    @admin.display(description=_("token issued at"), ordering="token_issued_at")
    def issued(self, obj: Feed) -> str:
        return when(obj.token_issued_at) if obj.token_issued_at else "—"

    @admin.display(description=pgettext_lazy("feed", "changed at"), ordering="updated_at")
    def updated(self, obj: Feed) -> str:
        return when(obj.updated_at)

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "shop_url":
            # An address typed without a scheme is the shop's HTTPS one.
            kwargs["assume_scheme"] = "https"
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if not change or obj.token_hash is None:
            _announce(request, obj, feed_token_renew(obj))

    def has_renew_token_permission(self, request) -> bool:
        return request.user.has_perm("feeds.renew_token_feed")

    @admin.action(
        description=_("Issue a new token (the old URL stops working)"), permissions=["renew_token"]
    )
    def new_token(self, request, queryset) -> None:
        for feed in queryset:
            _announce(request, feed, feed_token_renew(feed))


class CustomerGroupForm(forms.ModelForm):
    days = forms.TypedMultipleChoiceField(
        label=_("days of the week"),
        choices=Weekday.choices,
        coerce=int,
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )

    class Meta:
        model = CustomerGroup
        fields = ["name", "enabled", "adjustment_percent", "format", "recipients", "days", "time"]


@admin.register(CustomerGroup)
class CustomerGroupAdmin(ListAdminMixin, admin.ModelAdmin):
    form = CustomerGroupForm
    list_display = ["name", "enabled", "adjustment_percent", "format", "schedule", "served"]
    list_filter = ["enabled", "format"]
    search_fields = ["name", "recipients"]

    @admin.display(description=_("schedule"))
    def schedule(self, obj: CustomerGroup) -> str:
        days = ", ".join(str(Weekday(d).label) for d in sorted(obj.days))
        return f"{days} {obj.time:%H:%M}" if days else "—"

    @admin.display(description=_("last scheduled moment served"), ordering="served_until")
    def served(self, obj: CustomerGroup) -> str:
        return when(obj.served_until) if obj.served_until else "—"


@admin.register(CustomerMailing)
class CustomerMailingAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = ["group", "recipient", "version", "status", "attempts", "created", "sent"]
    list_filter = ["status", "group"]
    search_fields = ["recipient", "message_id"]
    list_select_related = ["group"]
    readonly_fields = [
        "group",
        "recipient",
        "version",
        "status",
        "message_id",
        "attempts",
        "last_error",
        "rows",
        "created_at",
        "sent_at",
    ]

    @admin.display(description=pgettext_lazy("mailing", "created"), ordering="created_at")
    def created(self, obj: CustomerMailing) -> str:
        return when(obj.created_at)

    @admin.display(description=pgettext_lazy("mailing", "sent"), ordering="sent_at")
    def sent(self, obj: CustomerMailing) -> str:
        return when(obj.sent_at) if obj.sent_at else "—"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
