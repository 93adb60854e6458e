from __future__ import annotations

import json
from datetime import timedelta

from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html

from . import services
from .models import OutboxEvent


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"
    SPANS = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}

    def lookups(self, request, model_admin):
        return [
            ("1h", "Newer than an hour"),
            ("1d", "Newer than a day"),
            ("old1d", "Older than a day"),
            ("old7d", "Older than a week"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value in self.SPANS:
            return queryset.filter(created_at__gte=timezone.now() - self.SPANS[value])
        if value in ("old1d", "old7d"):
            return queryset.filter(created_at__lt=timezone.now() - self.SPANS[value[3:]])
        return queryset


@admin.register(OutboxEvent)
class OutboxEventAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "kind",
        "aggregate_type",
        "aggregate_id",
        "status",
        "attempts",
        "next_attempt_at",
        "short_error",
    ]
    list_filter = ["status", "kind", AgeFilter]
    search_fields = ["id", "aggregate_id"]
    date_hierarchy = "created_at"
    actions = ["retry_now", "requeue", "mark_failed"]
    readonly_fields = [
        "id",
        "kind",
        "aggregate_type",
        "aggregate_id",
        "payload_pretty",
        "status",
        "attempts",
        "next_attempt_at",
        "claimed_by",
        "claimed_at",
        "last_error",
        "created_at",
        "sent_at",
        "finished_at",
    ]
    exclude = ["payload"]

    @admin.display(description="payload")
    def payload_pretty(self, obj: OutboxEvent) -> str:
        return format_html(
            "<pre>{}</pre>", json.dumps(obj.payload, indent=2, ensure_ascii=False, sort_keys=True)
        )

    @admin.display(description="last error")
    def short_error(self, obj: OutboxEvent) -> str:
        return obj.last_error[:100]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def _report(self, request, moved: int, total: int, done: str, skipped: str) -> None:
        self.message_user(request, f"{moved} event(s) {done}.", messages.SUCCESS)
        if total - moved:
            self.message_user(request, f"{total - moved} skipped: {skipped}.", messages.WARNING)

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("outbox.retry_outboxevent")

    def has_fail_permission(self, request) -> bool:
        return request.user.has_perm("outbox.fail_outboxevent")

    @admin.action(description="Retry now (skip the backoff wait)", permissions=["retry"])
    def retry_now(self, request, queryset):
        moved = services.events_retry_now(event_ids=queryset.values_list("id", flat=True))
        self._report(request, moved, queryset.count(), "due now", "not NEW")

    @admin.action(description="Requeue failed events (attempts start over)", permissions=["retry"])
    def requeue(self, request, queryset):
        moved = services.events_requeue(event_ids=queryset.values_list("id", flat=True))
        self._report(request, moved, queryset.count(), "requeued", "not FAILED")

    @admin.action(description="Mark failed (give up)", permissions=["fail"])
    def mark_failed(self, request, queryset):
        moved = services.events_mark_failed(
            event_ids=queryset.values_list("id", flat=True),
            reason=f"marked failed by {request.user.get_username()}",
        )
        self._report(request, moved, queryset.count(), "marked failed", "not NEW")
