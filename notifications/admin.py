from django.contrib import admin

from .models import Notification, Subscription


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "enabled", "on_succeeded", "on_partial", "on_failed"]
    list_filter = ["enabled", "reply_to_sender"]
    search_fields = ["email"]
    filter_horizontal = ["configs"]


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "recipient",
        "kind",
        "status",
        "attempts",
        "message_id",
        "sent_at",
    ]
    list_filter = ["status", "kind"]
    search_fields = ["recipient", "message_id"]
    raw_id_fields = ["price_import"]
    readonly_fields = [
        "price_import",
        "recipient",
        "kind",
        "status",
        "message_id",
        "attempts",
        "last_error",
        "created_at",
        "sent_at",
    ]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
