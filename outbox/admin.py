from __future__ import annotations

import json
from datetime import timedelta

from django.apps import apps
from django.contrib import admin, messages
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.adminutils import AuditAdminMixin, RetriedFilter, due, truncated, when
from core.claims import MARKED_FAILED_BY
from core.texts import Text, shown

from . import selectors, services
from .handlers import kind_label
from .models import OutboxEvent


def aggregate_link(obj: OutboxEvent) -> str:
    """The row an event is about, by its name, linked to its admin page when it has one."""
    name = obj.aggregate_name()
    try:
        opts = apps.get_model(obj.aggregate_type)._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.aggregate_id])
    except (LookupError, ValueError, NoReverseMatch):
        return name
    return format_html('<a href="{}">{}</a>', url, name)


class KindFilter(admin.SimpleListFilter):
    """The kinds present, by their names in the reader's language."""

    title = _("kind")
    parameter_name = "kind__exact"

    def lookups(self, request, model_admin):
        kinds = OutboxEvent.objects.order_by().values_list("kind", flat=True).distinct()
        return sorted(((kind, kind_label(kind)) for kind in kinds), key=lambda k: k[1])

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(kind=value) if value else queryset


class AgeFilter(admin.SimpleListFilter):
    title = _("age")
    parameter_name = "age"
    SPANS = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}

    def lookups(self, request, model_admin):
        return [
            ("1h", _("Newer than an hour")),
            ("1d", _("Newer than a day")),
            ("old1d", _("Older than a day")),
            ("old7d", _("Older than a week")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value in self.SPANS:
            return queryset.filter(created_at__gte=timezone.now() - self.SPANS[value])
        if value in ("old1d", "old7d"):
            return queryset.filter(created_at__lt=timezone.now() - self.SPANS[value[3:]])
        return queryset


class WaitingFilter(admin.SimpleListFilter):
    """The waiting events as the front page counts them: due now, backing off, stuck."""

    title = _("waiting")
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [
            ("due", _("due now")),
            ("backing_off", _("backing off (next attempt later)")),
            ("stuck", _("stuck (longer than the claim timeout)")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value in selectors.WAITING_STATES:
            return selectors.events_waiting(queryset, value)
        return queryset


@admin.register(OutboxEvent)
class OutboxEventAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display = [
        "created",
        "short_kind",
        "aggregate",
        "status",
        "attempts",
        "next_attempt",
        "short_error",
    ]
    list_filter = ["status", WaitingFilter, RetriedFilter, KindFilter, AgeFilter]
    search_fields = ["id", "aggregate_id"]
    date_hierarchy = "created_at"
    actions = ["retry_now", "requeue", "mark_failed"]
    readonly_fields = [
        "id",
        "kind_shown",
        "aggregate",
        "payload_pretty",
        "status",
        "attempts",
        "next_attempt_at",
        "claimed_by",
        "claimed_at",
        "error_text",
        "created_at",
        "sent_at",
        "finished_at",
    ]
    # The payload as a page shows it; the last error once, in the reader's language.
    exclude = ["kind", "aggregate_type", "aggregate_id", "payload", "last_error"]

    @admin.display(description=_("payload"))
    def payload_pretty(self, obj: OutboxEvent) -> str:
        """The payload as its handler reads it, folded: the ids it holds are for whoever
        debugs a handler; the operator has the kind and the row it is about."""
        return format_html(
            "<details><summary>{}</summary><pre>{}</pre></details>",
            gettext("JSON, as the handler reads it"),
            json.dumps(obj.payload, indent=2, ensure_ascii=False, sort_keys=True),
        )

    @admin.display(description=pgettext_lazy("outbox event", "created"), ordering="created_at")
    def created(self, obj: OutboxEvent) -> str:
        return when(obj.created_at)

    @admin.display(description=_("kind"), ordering="kind")
    def short_kind(self, obj: OutboxEvent) -> str:
        return truncated(kind_label(obj.kind), width="s")

    @admin.display(description=_("kind"))
    def kind_shown(self, obj: OutboxEvent) -> str:
        return kind_label(obj.kind)

    @admin.display(description=_("aggregate"), ordering="aggregate_id")
    def aggregate(self, obj: OutboxEvent) -> str:
        return aggregate_link(obj)

    @admin.display(description=_("next attempt"), ordering="next_attempt_at")
    def next_attempt(self, obj: OutboxEvent) -> str:
        # Only a NEW event has one to come; SENT and FAILED keep the last one's time.
        if obj.status != OutboxEvent.Status.NEW:
            return "—"
        return due(obj.next_attempt_at)

    @admin.display(description=_("last error"))
    def short_error(self, obj: OutboxEvent) -> str:
        return truncated(shown(obj, "last_error"), width="m", error=True)

    @admin.display(description=_("last error"))
    def error_text(self, obj: OutboxEvent) -> str:
        """The stored reason in the reader's language."""
        return shown(obj, "last_error") or "—"

    def has_change_permission(self, request, obj=None):
        return False

    def _report(self, request, *, done: str, skipped: int, why: str) -> None:
        self.message_user(request, done, messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                ngettext("%(count)d skipped: %(why)s.", "%(count)d skipped: %(why)s.", skipped)
                % {"count": skipped, "why": why},
                messages.WARNING,
            )

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("outbox.retry_outboxevent")

    def has_fail_permission(self, request) -> bool:
        return request.user.has_perm("outbox.fail_outboxevent")

    @admin.action(description=_("Retry now (skip the backoff wait)"), permissions=["retry"])
    def retry_now(self, request, queryset):
        moved = services.events_retry_now(event_ids=queryset.values_list("id", flat=True))
        self._report(
            request,
            done=ngettext("%(count)d event due now.", "%(count)d events due now.", moved)
            % {"count": moved},
            skipped=queryset.count() - moved,
            why=gettext("not NEW"),
        )

    @admin.action(
        description=_("Requeue failed events (attempts start over)"), permissions=["retry"]
    )
    def requeue(self, request, queryset):
        moved = services.events_requeue(event_ids=queryset.values_list("id", flat=True))
        self._report(
            request,
            done=ngettext("%(count)d event requeued.", "%(count)d events requeued.", moved)
            % {"count": moved},
            skipped=queryset.count() - moved,
            why=gettext("not FAILED"),
        )

    @admin.action(description=_("Mark failed (give up)"), permissions=["fail"])
    def mark_failed(self, request, queryset):
        moved = services.events_mark_failed(
            event_ids=queryset.values_list("id", flat=True),
            reason=Text(MARKED_FAILED_BY, user=request.user.get_username()),
        )
        self._report(
            request,
            done=ngettext(
                "%(count)d event marked failed.", "%(count)d events marked failed.", moved
            )
            % {"count": moved},
            skipped=queryset.count() - moved,
            why=gettext("not NEW"),
        )
