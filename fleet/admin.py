from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import BooleanField, ExpressionWrapper
from django.utils.html import format_html
from django.utils.translation import gettext, pgettext, pgettext_lazy

from core.adminutils import AuditAdminMixin, truncated, when
from core.brokers import fingerprint

from .models import ProcessHeartbeat
from .selectors import live_brokers, process_is_live


@admin.register(ProcessHeartbeat)
class ProcessHeartbeatAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display = [
        "short_process_id",
        "kind",
        "short_broker",
        "state",
        "seen",
        "host",
        "pid",
        "started",
    ]
    list_filter = ["kind", "broker", "stopped"]
    readonly_fields = [
        "process_id",
        "kind",
        "host",
        "pid",
        "broker",
        "started_at",
        "last_seen",
        "stopped",
    ]

    def get_queryset(self, request):
        live = ExpressionWrapper(process_is_live(), output_field=BooleanField())
        return super().get_queryset(request).annotate(is_live=live)

    def changelist_view(self, request, extra_context=None):
        brokers = live_brokers()
        if len(brokers) > 1:
            used = "; ".join(
                f"{broker}: {', '.join(processes)}" for broker, processes in brokers.items()
            )
            messages.error(
                request,
                gettext(
                    "The live processes use different django-q2 brokers, so work enqueued "
                    "on one is never run by workers of the other (%(used)s). Set "
                    "PRICEFEED_REDIS_URL the same on every process."
                )
                % {"used": used},
            )
        # The web process enqueues tasks too (Test connection, Reprocess, ...) but keeps
        # no heartbeat (its requests are short, its workers forked): it is compared here.
        mine = fingerprint()
        if brokers and mine not in brokers:
            messages.error(
                request,
                gettext(
                    "This web process uses the django-q2 broker %(mine)s, but the live "
                    "processes use %(theirs)s: tasks enqueued from the admin are never run. "
                    "Set PRICEFEED_REDIS_URL the same on every process."
                )
                % {"mine": mine, "theirs": gettext(" and ").join(brokers)},
            )
        return super().changelist_view(request, extra_context)

    @admin.display(description=pgettext_lazy("process", "process"), ordering="process_id")
    def short_process_id(self, obj: ProcessHeartbeat) -> str:
        return truncated(obj.process_id, width="s")

    @admin.display(description=pgettext_lazy("process", "broker"), ordering="broker")
    def short_broker(self, obj: ProcessHeartbeat) -> str:
        return truncated(obj.broker, width="s")

    @admin.display(description=pgettext_lazy("process", "last seen"), ordering="last_seen")
    def seen(self, obj: ProcessHeartbeat) -> str:
        return when(obj.last_seen)

    @admin.display(description=pgettext_lazy("process", "started"), ordering="started_at")
    def started(self, obj: ProcessHeartbeat) -> str:
        return when(obj.started_at)

    @admin.display(description=pgettext_lazy("process", "state"))
    def state(self, obj: ProcessHeartbeat) -> str:
        if obj.stopped:
            return pgettext("process", "stopped")
        if getattr(obj, "is_live", False):
            return pgettext("process", "live")
        return format_html('<span class="pf-error">{}</span>', pgettext("process", "dead"))
