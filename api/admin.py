"""API tokens in the admin: made with a key shown once, revoked, never shown again.

A user who may add tokens makes them for himself; only a superuser makes them for
someone else (a token acts as its user: making one for another user would be acting as
that user) and sees everyone's.

The new key is shown on the page that answers the form (never a cookie: Django's
messages travel in one, readable by whoever holds the browser's cookies). Revoking is
the "revoke" action only, never a field, so no one un-revokes a token; only a superuser
moves a token's expiry later or clears it, anyone else may only bring it closer.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, pgettext, pgettext_lazy

from core.adminutils import ListAdminMixin, absolute, when

from .models import ApiToken
from .tokens import token_key_assign


def superuser(request) -> bool:
    return request.user.is_active and request.user.is_superuser


class ApiTokenForm(forms.ModelForm):
    # Set by ApiTokenAdmin.get_form: whether the user may move the expiry later.
    may_extend = False

    def clean_expires_at(self):
        """A changed token's expiry no later than it was (nor cleared), unless
        ``may_extend``: the owner of a token may shorten its life, not lengthen it."""
        expires_at = self.cleaned_data["expires_at"]
        before = self.instance.expires_at if self.instance.pk else None
        if self.may_extend or before is None:
            return expires_at
        if expires_at is None or expires_at > before:
            raise forms.ValidationError(
                _("Only a superuser can move a token's expiry later; set %(before)s or earlier."),
                code="expiry_extended",
                params={"before": absolute(before)},
            )
        return expires_at


@admin.register(ApiToken)
class ApiTokenAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "user",
        "prefix",
        "state_display",
        "created_display",
        "last_used_display",
        "expires_at",
    ]
    list_filter = ["revoked_at", "expires_at"]
    search_fields = ["name", "prefix", "user__username"]
    form = ApiTokenForm
    readonly_fields = ["prefix", "revoked_at", "created_at", "last_used_at"]
    fields = ["user", "name", "prefix", "expires_at", "revoked_at", "created_at", "last_used_at"]
    actions = ["revoke"]

    def get_queryset(self, request) -> QuerySet[ApiToken]:
        tokens = super().get_queryset(request).select_related("user")
        return tokens if superuser(request) else tokens.filter(user=request.user)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "user" and not superuser(request):
            kwargs["queryset"] = get_user_model().objects.filter(pk=request.user.pk)
            kwargs["initial"] = request.user.pk
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request) -> dict:
        return {"user": request.user.pk, **super().get_changeform_initial_data(request)}

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:
            return [*self.readonly_fields, "user"]  # a token never changes hands
        return self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        # A class of its own per request (modelform_factory), so the flag is this user's.
        return type(form.__name__, (form,), {"may_extend": superuser(request)})

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        if not change:
            if not superuser(request):
                obj.user = request.user
            obj.key = token_key_assign(obj)
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj: ApiToken, post_url_continue=None):
        """The page that shows the new key, once, and is never cached."""
        response = TemplateResponse(
            request,
            "admin/api/apitoken/key.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "token": obj,
                "key": obj.key,
                "title": _("The key of token “%(name)s”") % {"name": obj.name},
            },
        )
        add_never_cache_headers(response)
        return response

    @admin.display(description=pgettext_lazy("api token", "state"))
    def state_display(self, obj: ApiToken) -> str:
        now = timezone.now()
        if obj.revoked_at is not None and obj.revoked_at <= now:
            return pgettext("api token", "revoked")
        if obj.expires_at is not None and obj.expires_at <= now:
            return pgettext("api token", "expired")
        return pgettext("api token", "active")

    @admin.display(description=pgettext_lazy("api token", "created"), ordering="created_at")
    def created_display(self, obj: ApiToken):
        return when(obj.created_at)

    @admin.display(description=_("last used"), ordering="last_used_at")
    def last_used_display(self, obj: ApiToken):
        return when(obj.last_used_at)

    @admin.action(description=_("Revoke selected tokens"), permissions=["change"])
    def revoke(self, request, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(
            request,
            ngettext("%(count)d token revoked.", "%(count)d tokens revoked.", count)
            % {"count": count},
            messages.SUCCESS,
        )
