from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.adminutils import (
    EMPTY,
    AuditAdminMixin,
    ListAdminMixin,
    RetriedFilter,
    SinceFilter,
    annotated,
    due,
    numbered,
    truncated,
    when,
)
from core.texts import Text, shown, translated
from outbox.models import OutboxEvent
from pricefeed.imports.outcome import FINAL
from pricefeed.models import PriceImport

from . import retries, selectors, services, texts
from .kinds import kinds
from .models import Notification, Subscription


class OutcomeFilter(admin.SimpleListFilter):
    """The import outcome a notification is about, named as the import's status is (the
    field stores the status's value, without choices of its own)."""

    title = _("outcome")
    parameter_name = "outcome__exact"

    def lookups(self, request, model_admin):
        return [(status, PriceImport.Status(status).label) for status in FINAL]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(outcome=value) if value else queryset


class KindFilter(admin.SimpleListFilter):
    """The kind of notification (notifications.kinds), named by its label."""

    title = _("kind")
    parameter_name = "kind__exact"

    def lookups(self, request, model_admin):
        return [(kind.name, kind.label) for kind in kinds()]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(kind=value) if value else queryset


@admin.register(Subscription)
class SubscriptionAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "__str__",
        "language",
        "enabled",
        "on_succeeded",
        "on_partial",
        "on_failed",
        "on_overdue",
    ]
    list_filter = ["enabled", "reply_to_sender", "language"]
    search_fields = ["email"]
    filter_horizontal = ["configs"]


@admin.register(Notification)
class NotificationAdmin(AuditAdminMixin, admin.ModelAdmin):
    # When it was sent, its Message-ID and each attempt are on the notification's page.
    list_display = [
        "created",
        "short_recipient",
        "outcome_shown",
        "status",
        "attempts",
        "next_attempt",
        "short_error",
        "about",
    ]
    list_filter = [
        "status",
        RetriedFilter,
        SinceFilter.on("created_at"),
        KindFilter,
        OutcomeFilter,
    ]
    search_fields = ["recipient", "message_id"]
    actions = ["retry_now", "requeue", "give_up"]
    # Shown by their names: "about", "outcome_shown", "mail_language"; the last error
    # once, in the reader's language ("error_text").
    exclude = ["kind", "price_import", "alert", "outcome", "language", "last_error"]
    readonly_fields = [
        "about",
        "recipient",
        "outcome_shown",
        "mail_language",
        "status",
        "message_id",
        "attempts",
        "next_attempt",
        "error_text",
        "created_at",
        "sent_at",
        "delivery_history",
    ]

    def get_queryset(self, request):
        return selectors.notifications_with_send_event(
            super().get_queryset(request).select_related("price_import__config", "alert__config")
        )

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=pgettext_lazy("notification", "created"), ordering="created_at")
    def created(self, obj: Notification) -> str:
        return when(obj.created_at)

    @admin.display(description=_("recipient"), ordering="recipient")
    def short_recipient(self, obj: Notification) -> str:
        return truncated(obj.recipient, width="s")

    # Not named "outcome": the admin would show the field of that name, its stored value.
    @admin.display(description=_("outcome"), ordering="outcome")
    def outcome_shown(self, obj: Notification) -> str:
        return obj.outcome_label()

    @admin.display(description=_("language"))
    def mail_language(self, obj: Notification) -> str:
        code = services.mail_language(obj.language)
        return dict(settings.LANGUAGES).get(code, code)

    @admin.display(description=_("next attempt"), ordering="send_next_attempt_at")
    def next_attempt(self, obj: Notification) -> str:
        """When its send event tries again (NEW: backing off, or due); being sent now;
        or nothing more to come."""
        status = annotated(obj, "send_status")
        if status == OutboxEvent.Status.NEW:
            return due(annotated(obj, "send_next_attempt_at"))
        if status == OutboxEvent.Status.PROCESSING:
            return gettext("being sent")
        return EMPTY

    @admin.display(description=_("last error"))
    def short_error(self, obj: Notification) -> str:
        # The mail's own error, or why its event was given up (by an operator, or for
        # want of a handler) when the mail has none.
        error = (
            shown(obj, "last_error")
            or translated(annotated(obj, "send_error_text"))
            or annotated(obj, "send_error")
            or ""
        )
        return truncated(error, width="m", error=True)

    @admin.display(description=_("last error"))
    def error_text(self, obj: Notification) -> str:
        """The stored reason in the reader's language."""
        return shown(obj, "last_error") or EMPTY

    @admin.display(description=_("delivery attempts"))
    def delivery_history(self, obj: Notification) -> str:
        """Each try at handing the mail to the SMTP server, oldest first: when, how it
        ended, the server's reply code and its words (or the error)."""
        attempts = obj.delivery_attempts.order_by("pk")
        if not attempts:
            return EMPTY
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    date_format(localtime(a.at), "DATETIME_FORMAT"),
                    a.get_outcome_display(),
                    a.code or EMPTY,
                    shown(a, "reply") or EMPTY,
                )
                for a in attempts
            ),
        )
        return format_html(
            '<table class="delivery-attempts"><thead><tr><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th></tr></thead><tbody>{}</tbody></table>",
            gettext("time"),
            gettext("outcome"),
            gettext("SMTP code"),
            gettext("server reply"),
            rows,
        )

    @admin.display(description=_("about"))
    def about(self, obj: Notification) -> str:
        """What the mail is about, linked: its import, or its overdue-list alert (to the
        config)."""
        if obj.price_import is not None:
            url = reverse("admin:pricefeed_priceimport_change", args=[obj.price_import_id])
            text = (
                f"{numbered(obj.price_import_id)} {obj.price_import.config.name}: "
                f"{obj.price_import.filename}"
            )
        elif obj.alert is not None:
            # Alerts have no page of their own: the config's says what it expects.
            url = reverse("admin:pricefeed_pricelistconfig_change", args=[obj.alert.config_id])
            text = str(obj.alert)
        else:
            return EMPTY
        return format_html('<a href="{}">{}</a>', url, truncated(text, width="s"))

    # -- the outbox's actions, on the send events of the selected notifications ------

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("outbox.retry_outboxevent")

    def has_fail_permission(self, request) -> bool:
        return request.user.has_perm("outbox.fail_outboxevent")

    def _report(self, request, *, done: str, skipped: int, why: str) -> None:
        self.message_user(request, done, messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                ngettext("%(count)d skipped: %(why)s.", "%(count)d skipped: %(why)s.", skipped)
                % {"count": skipped, "why": why},
                messages.WARNING,
            )

    @admin.action(description=_("Retry now (skip the backoff wait)"), permissions=["retry"])
    def retry_now(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        moved = retries.notifications_retry_now(notification_ids=ids)
        self._report(
            request,
            done=ngettext(
                "%(count)d notification due now.", "%(count)d notifications due now.", moved
            )
            % {"count": moved},
            skipped=len(ids) - moved,
            why=gettext("not waiting for a retry"),
        )

    @admin.action(
        description=_("Requeue failed notifications (attempts start over)"),
        permissions=["retry"],
    )
    def requeue(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        moved = retries.notifications_requeue(notification_ids=ids)
        self._report(
            request,
            done=ngettext(
                "%(count)d notification requeued.", "%(count)d notifications requeued.", moved
            )
            % {"count": moved},
            skipped=len(ids) - moved,
            why=gettext("not failed"),
        )

    @admin.action(description=_("Give up (mark failed)"), permissions=["fail"])
    def give_up(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        moved = retries.notifications_give_up(
            notification_ids=ids,
            reason=Text(texts.GIVEN_UP_BY, user=request.user.get_username()),
        )
        self._report(
            request,
            done=ngettext(
                "%(count)d notification given up.", "%(count)d notifications given up.", moved
            )
            % {"count": moved},
            skipped=len(ids) - moved,
            why=gettext("not waiting to be sent"),
        )
