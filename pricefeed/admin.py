from __future__ import annotations

from typing import cast

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from core.adminutils import annotated
from mailboxes import admin as mailboxes_admin
from mailboxes.models import InboundMessage, Mailbox

from .forms import PreviewForm, PriceListConfigForm
from .imports import lifecycle, preview
from .models import PriceImport, PriceItem, PriceItemQuerySet, PriceListConfig

PREVIEW_ROWS = 20


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
        "sender_auth",
        "mode",
        "preview_link",
    ]
    list_filter = ["enabled", "mailbox", "sender_auth", "mode"]
    search_fields = ["name", "sender_pattern", "subject_pattern", "filename_pattern"]
    readonly_fields = ["preview_link"]

    @admin.display(description="preview")
    def preview_link(self, obj: PriceListConfig) -> str:
        if not obj.pk:
            return "save the config first"
        url = reverse("admin:pricefeed_pricelistconfig_preview", args=[obj.pk])
        return format_html('<a href="{}">Preview a file against this config</a>', url)

    def get_urls(self):
        return [
            path(
                "<int:pk>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="pricefeed_pricelistconfig_preview",
            ),
            *super().get_urls(),
        ]

    def preview_view(self, request, pk: int):
        """Parses an uploaded file as this config would and shows the first rows."""
        config = get_object_or_404(PriceListConfig, pk=pk)
        if not self.has_view_permission(request, config):
            raise PermissionDenied
        form = PreviewForm(request.POST or None, request.FILES or None)
        results = None
        if request.method == "POST" and form.is_valid():
            results = preview.preview_upload(
                config=config, upload=form.cleaned_data["file"], rows=PREVIEW_ROWS
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Preview a file against “{config}”",
            "opts": self.model._meta,
            "original": config,
            "form": form,
            "results": results,
            "preview_rows": PREVIEW_ROWS,
        }
        return TemplateResponse(request, "admin/pricefeed/pricelistconfig/preview.html", context)


@admin.register(PriceImport)
class PriceImportAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "created_at",
        "config",
        "filename",
        "status",
        "format",
        "rows_ok",
        "rows_failed",
        "duration",
        "message_link",
    ]
    list_filter = ["status", "config__mailbox", "config", "format"]
    search_fields = ["filename", "sha256", "message__subject"]
    date_hierarchy = "created_at"
    actions = ["rerun_failed"]
    readonly_fields = [
        "message_link",
        "config",
        "attachment_key",
        "filename",
        "content_type",
        "size",
        "sha256",
        "status",
        "format",
        "last_error",
        "rows_total",
        "rows_ok",
        "rows_failed",
        "rows_skipped",
        "items_link",
        "parse_info",
        "diff_summary",
        "row_errors",
        "attempts",
        "crashes",
        "claimed_by",
        "claimed_at",
        "next_attempt_at",
        "created_at",
        "started_at",
        "finished_at",
        "duration",
    ]
    fieldsets = [
        (None, {"fields": ["status", "last_error", "config", "message_link", "filename"]}),
        (
            "Rows",
            {"fields": [("rows_total", "rows_ok", "rows_failed", "rows_skipped"), "items_link"]},
        ),
        ("Changes against the previous import", {"fields": ["diff_summary"]}),
        ("Row errors", {"fields": ["row_errors"]}),
        (
            "File",
            {
                "fields": [
                    "attachment_key",
                    "content_type",
                    "size",
                    "sha256",
                    "format",
                    "parse_info",
                ]
            },
        ),
        (
            "Run",
            {
                "fields": [
                    ("attempts", "crashes"),
                    ("claimed_by", "claimed_at"),
                    "next_attempt_at",
                    ("created_at", "started_at", "finished_at", "duration"),
                ]
            },
        ),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("config", "message")
            .defer("message__raw", "message__match_report")
            .annotate(run_time=F("finished_at") - F("started_at"))
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="duration", ordering="run_time")
    def duration(self, obj: PriceImport) -> str:
        run_time = getattr(obj, "run_time", None)
        return f"{run_time.total_seconds():.2f} s" if run_time else "—"

    @admin.display(description="message")
    def message_link(self, obj: PriceImport) -> str:
        url = reverse("admin:mailboxes_inboundmessage_change", args=[obj.message_id])
        return format_html('<a href="{}">#{} {}</a>', url, obj.message_id, obj.message.subject)

    @admin.display(description="price items")
    def items_link(self, obj: PriceImport) -> str:
        url = reverse("admin:pricefeed_priceitem_changelist") + f"?price_import__id__exact={obj.pk}"
        return format_html('<a href="{}">{} item(s)</a>', url, obj.rows_ok)

    @admin.display(description="diff")
    def diff_summary(self, obj: PriceImport) -> str:
        diff = obj.diff or {}
        if not diff:
            return "—"
        if diff.get("previous_import") is None:
            return f"first import of this config: {diff.get('added', 0)} item(s)"
        changed = format_html_join(
            "",
            "<li>{}: {} → {}</li>",
            ((c["sku"], c["old"], c["new"]) for c in diff.get("changed_sample", [])),
        )
        return format_html(
            "against import #{}: {} added, {} removed, {} price(s) changed"
            "<ul>{}</ul><div>added: {}</div><div>removed: {}</div>",
            diff["previous_import"],
            diff.get("added", 0),
            diff.get("removed", 0),
            diff.get("changed", 0),
            changed,
            ", ".join(diff.get("added_sample", [])) or "—",
            ", ".join(diff.get("removed_sample", [])) or "—",
        )

    @admin.display(description="row errors")
    def row_errors(self, obj: PriceImport) -> str:
        if not obj.errors:
            return "—"
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td></tr>", ((e["row"], e["error"]) for e in obj.errors)
        )
        total = (obj.parse_info or {}).get("errors_total", len(obj.errors))
        more = f" (first {len(obj.errors)} of {total})" if total > len(obj.errors) else ""
        return format_html("<table><tr><th>row</th><th>error{}</th></tr>{}</table>", more, rows)

    def has_rerun_permission(self, request) -> bool:
        return request.user.has_perm("pricefeed.rerun_priceimport")

    @admin.action(description="Run failed imports again", permissions=["rerun"])
    def rerun_failed(self, request, queryset):
        moved = lifecycle.price_imports_requeue(import_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"{moved} import(s) queued again.", messages.SUCCESS)
        if skipped := queryset.count() - moved:
            self.message_user(request, f"{skipped} skipped: not FAILED.", messages.WARNING)


@admin.register(PriceItem)
class PriceItemAdmin(admin.ModelAdmin):
    list_display = ["sku", "name", "price", "currency", "quantity", "row_number", "price_import"]
    search_fields = ["sku", "name"]
    raw_id_fields = ["price_import"]
    list_select_related = ["price_import__config"]
    show_full_result_count = False
    readonly_fields = ["price_import", "sku", "name", "price", "currency", "quantity", "row_number"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        # "The items of import N" (the import page's link) as a range of the primary
        # key, the table's one index (see PriceItem); the changelist adds the filter on
        # price_import itself.
        import_id = request.GET.get("price_import__id__exact", "")
        if import_id.isdigit():
            queryset = cast(PriceItemQuerySet, queryset).of_import(int(import_id))
        return queryset

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # An import's rows are what the next import's diff compares with (and what its
        # rows digest stands for): they go only with their import.
        return False


# -- the mailbox pages, with what this app adds to them --------------------------------


class PriceListConfigInline(admin.StackedInline):
    model = PriceListConfig
    form = PriceListConfigForm
    extra = 0
    fields = [
        ("name", "enabled"),
        ("sender_pattern", "subject_pattern", "filename_pattern"),
        "sender_auth",
        ("sheet", "number_format", "mode"),
        "columns",
    ]


IMPORT_INLINE_FIELDS = (
    "config",
    "filename",
    "status",
    "size",
    "rows_ok",
    "rows_failed",
    "created_at",
)


class PriceImportInline(admin.TabularInline):
    model = PriceImport
    extra = 0
    can_delete = False
    fields = IMPORT_INLINE_FIELDS
    readonly_fields = IMPORT_INLINE_FIELDS

    def has_add_permission(self, request, obj=None):
        return False


admin.site.unregister(Mailbox)


@admin.register(Mailbox)
class MailboxAdmin(mailboxes_admin.MailboxAdmin):
    """The mailbox page, with its price-list configs inline and their count listed."""

    inlines = [PriceListConfigInline, *mailboxes_admin.MailboxAdmin.inlines]
    # The mailbox's columns, its config count after the folder.
    list_display = (
        *mailboxes_admin.MAILBOX_COLUMNS[:4],
        "configs_enabled",
        *mailboxes_admin.MAILBOX_COLUMNS[4:],
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_configs=Count("configs", distinct=True))

    @admin.display(description="configs", ordering="n_configs")
    def configs_enabled(self, obj: Mailbox) -> int:
        return annotated(obj, "n_configs")


admin.site.unregister(InboundMessage)


@admin.register(InboundMessage)
class InboundMessageAdmin(mailboxes_admin.InboundMessageAdmin):
    """The inbound message page, with the imports each message made."""

    inlines = [*mailboxes_admin.InboundMessageAdmin.inlines, PriceImportInline]
    list_display = (*mailboxes_admin.MESSAGE_COLUMNS, "imports_count")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_imports=Count("imports"))

    @admin.display(description="imports", ordering="n_imports")
    def imports_count(self, obj: InboundMessage) -> int:
        return annotated(obj, "n_imports")
