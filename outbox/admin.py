import json

from django.contrib import admin
from django.utils.html import format_html

from .models import OutboxEvent


@admin.register(OutboxEvent)
class OutboxEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "kind", "aggregate_type", "aggregate_id", "status", "attempts"]
    list_filter = ["status", "kind"]
    search_fields = ["id", "aggregate_id"]
    date_hierarchy = "created_at"
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
    ]
    exclude = ["payload"]

    @admin.display(description="payload")
    def payload_pretty(self, obj: OutboxEvent) -> str:
        return format_html(
            "<pre>{}</pre>", json.dumps(obj.payload, indent=2, ensure_ascii=False, sort_keys=True)
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
