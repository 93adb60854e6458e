from django.contrib import admin

from .forms import PriceListConfigForm
from .models import PriceImport, PriceListConfig


@admin.register(PriceListConfig)
class PriceListConfigAdmin(admin.ModelAdmin):
    form = PriceListConfigForm
    list_display = [
        "name",
        "mailbox",
        "enabled",
        "sender_pattern",
        "subject_pattern",
        "filename_pattern",
        "mode",
    ]
    list_filter = ["enabled", "mailbox", "mode"]
    search_fields = ["name", "sender_pattern", "subject_pattern", "filename_pattern"]


@admin.register(PriceImport)
class PriceImportAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "created_at",
        "config",
        "filename",
        "status",
        "rows_ok",
        "rows_failed",
        "message",
    ]
    list_filter = ["status", "config"]
    search_fields = ["filename", "sha256"]
    raw_id_fields = ["message"]
    readonly_fields = [f.name for f in PriceImport._meta.fields]

    def has_add_permission(self, request):
        return False
