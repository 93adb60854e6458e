from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import BooleanField, ExpressionWrapper
from django.utils.html import format_html

from core.brokers import fingerprint

from .models import ProcessHeartbeat
from .selectors import live_brokers, process_is_live


@admin.register(ProcessHeartbeat)
class ProcessHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["process_id", "kind", "broker", "state", "last_seen", "host", "pid"]
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

    def has_add_permission(self, request):
        return False

    def changelist_view(self, request, extra_context=None):
        brokers = live_brokers()
        if len(brokers) > 1:
            used = "; ".join(
                f"{broker}: {', '.join(processes)}" for broker, processes in brokers.items()
            )
            messages.error(
                request,
                "The live processes use different django-q2 brokers, so work enqueued on "
                f"one is never run by workers of the other ({used}). Set "
                "PRICEFEED_REDIS_URL the same on every process.",
            )
        # The web process enqueues tasks too (Test connection, Reprocess, ...) but keeps
        # no heartbeat (its requests are short, its workers forked): it is compared here.
        mine = fingerprint()
        if brokers and mine not in brokers:
            messages.error(
                request,
                f"This web process uses the django-q2 broker {mine}, but the live processes "
                f"use {' and '.join(brokers)}: tasks enqueued from the admin are never run. "
                "Set PRICEFEED_REDIS_URL the same on every process.",
            )
        return super().changelist_view(request, extra_context)

    @admin.display(description="state")
    def state(self, obj: ProcessHeartbeat) -> str:
        if obj.stopped:
            return "stopped"
        if getattr(obj, "is_live", False):
            return "live"
        return format_html('<span style="color:#ba2121">{}</span>', "dead")
