from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from pricefeed.forms import PriceListConfigForm
from pricefeed.models import PriceImport, PriceListConfig

from . import services
from .forms import MailboxForm
from .imap import ImapError, check_connection
from .listener import connection_settings
from .models import InboundMessage, InstanceHeartbeat, Mailbox, MailboxCheckpoint, MailboxLease


class PriceListConfigInline(admin.StackedInline):
    model = PriceListConfig
    form = PriceListConfigForm
    extra = 0
    fields = [
        ("name", "enabled"),
        ("sender_pattern", "subject_pattern", "filename_pattern"),
        ("sheet", "number_format", "mode"),
        "columns",
    ]


class CheckpointInline(admin.TabularInline):
    model = MailboxCheckpoint
    extra = 0
    can_delete = False
    readonly_fields = ["folder", "uidvalidity", "last_uid", "updated_at"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Mailbox)
class MailboxAdmin(admin.ModelAdmin):
    form = MailboxForm
    list_display = [
        "name",
        "enabled",
        "address",
        "folder",
        "configs_enabled",
        "holder",
        "last_connected_at",
        "problem",
    ]
    list_filter = ["enabled", "security"]
    search_fields = ["name", "host", "username"]
    inlines = [PriceListConfigInline, CheckpointInline]
    actions = ["test_connection"]
    readonly_fields = [
        "last_connected_at",
        "last_error",
        "last_error_at",
        "created_at",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["name", "enabled"]}),
        (
            "Server",
            {
                "fields": [
                    ("host", "port", "security"),
                    ("username", "password"),
                    "folder",
                    "backfill",
                    "weight",
                ]
            },
        ),
        (
            "Status",
            {
                "fields": [
                    "last_connected_at",
                    ("last_error", "last_error_at"),
                    ("created_at", "updated_at"),
                ]
            },
        ),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("lease")
            .annotate(n_configs=Count("configs", distinct=True))
        )

    @admin.display(description="server")
    def address(self, obj: Mailbox) -> str:
        return f"{obj.username}@{obj.host}:{obj.port} ({obj.security})"

    @admin.display(description="configs", ordering="n_configs")
    def configs_enabled(self, obj: Mailbox) -> int:
        return obj.n_configs

    @admin.display(description="listener")
    def holder(self, obj: Mailbox) -> str:
        lease = getattr(obj, "lease", None)
        if lease is None or not lease.owner:
            return "—"
        if lease.expires_at and lease.expires_at < timezone.now():
            return f"{lease.owner} (expired)"
        return lease.owner

    @admin.display(description="last error")
    def problem(self, obj: Mailbox) -> str:
        if not obj.last_error:
            return ""
        return format_html('<span style="color:#ba2121">{}</span>', obj.last_error[:120])

    @admin.action(description="Test connection (login and select the folder)")
    def test_connection(self, request, queryset):
        for mailbox in queryset:
            try:
                summary = check_connection(connection_settings(mailbox))
            except ImapError as exc:
                self.message_user(request, f"{mailbox.name}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{mailbox.name}: {summary}", messages.SUCCESS)


class PriceImportInline(admin.TabularInline):
    model = PriceImport
    extra = 0
    can_delete = False
    fields = ["config", "filename", "status", "size", "rows_ok", "rows_failed", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(InboundMessage)
class InboundMessageAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "received_at",
        "mailbox",
        "status",
        "from_address",
        "subject",
        "size",
        "attempts",
        "imports_count",
    ]
    list_filter = ["status", "mailbox"]
    search_fields = ["subject", "from_address", "from_header", "message_id"]
    date_hierarchy = "received_at"
    actions = ["reprocess", "mark_failed"]
    inlines = [PriceImportInline]
    readonly_fields = [
        "mailbox",
        "folder",
        "uidvalidity",
        "uid",
        "message_id",
        "sent_at",
        "from_header",
        "from_address",
        "subject",
        "size",
        "sha256",
        "dedup_key",
        "status",
        "attempts",
        "claimed_by",
        "claimed_at",
        "next_attempt_at",
        "last_error",
        "warnings_list",
        "received_at",
        "finished_at",
        "raw_download",
        "report",
    ]
    fieldsets = [
        (None, {"fields": ["status", "last_error", "warnings_list", "report"]}),
        (
            "Message",
            {
                "fields": [
                    "subject",
                    "from_header",
                    "from_address",
                    "sent_at",
                    "message_id",
                    "size",
                    "sha256",
                    "raw_download",
                ]
            },
        ),
        ("Where", {"fields": ["mailbox", "folder", "uidvalidity", "uid", "dedup_key"]}),
        (
            "Processing",
            {
                "fields": [
                    "attempts",
                    "claimed_by",
                    "claimed_at",
                    "next_attempt_at",
                    "received_at",
                    "finished_at",
                ]
            },
        ),
    ]

    def get_queryset(self, request):
        # The raw bytes stay in the database until somebody downloads them.
        return (
            super()
            .get_queryset(request)
            .defer("raw", "match_report")
            .select_related("mailbox")
            .annotate(n_imports=Count("imports"))
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="imports", ordering="n_imports")
    def imports_count(self, obj: InboundMessage) -> int:
        return obj.n_imports

    @admin.display(description="warnings")
    def warnings_list(self, obj: InboundMessage) -> str:
        return format_html_join("\n", "<div>{}</div>", ((w,) for w in obj.warnings)) or "—"

    @admin.display(description="raw message")
    def raw_download(self, obj: InboundMessage) -> str:
        if not obj.sha256:
            return "not stored (refused before download)"
        url = reverse("admin:mailboxes_inboundmessage_raw", args=[obj.pk])
        return format_html('<a href="{}">download .eml ({} bytes)</a>', url, obj.size)

    @admin.display(description="match report")
    def report(self, obj: InboundMessage) -> str:
        report = obj.match_report or {}
        if not report:
            return "not processed yet"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (c["name"], "✔ matched" if c["matched"] else "✘ no match", "; ".join(c["reasons"]))
                for c in report.get("configs", [])
            ),
        )
        attachments = format_html_join(
            "",
            "<li>{} ({}, {} bytes)</li>",
            ((a["filename"], a["content_type"], a["size"]) for a in report.get("attachments", [])),
        )
        extra = format_html_join(
            "",
            "<div>{}</div>",
            (
                (str(d),)
                for d in report.get("defects", []) + ([report["note"]] if "note" in report else [])
            ),
        )
        return format_html(
            "<table><tr><th>config</th><th>verdict</th><th>why</th></tr>{}</table>"
            "<p>Attachments:</p><ul>{}</ul>{}",
            rows,
            attachments or "—",
            extra,
        )

    def get_urls(self):
        return [
            path(
                "<int:pk>/raw/",
                self.admin_site.admin_view(self.raw_view),
                name="mailboxes_inboundmessage_raw",
            ),
            *super().get_urls(),
        ]

    def raw_view(self, request, pk: int):
        message = get_object_or_404(InboundMessage, pk=pk, raw__isnull=False)
        response = HttpResponse(bytes(message.raw), content_type="message/rfc822")
        response["Content-Disposition"] = f'attachment; filename="message-{pk}.eml"'
        return response

    @admin.action(description="Reprocess (match again and create missing imports)")
    def reprocess(self, request, queryset):
        moved = services.messages_requeue(message_ids=queryset.values_list("pk", flat=True))
        skipped = queryset.count() - moved
        self.message_user(request, f"{moved} message(s) queued for processing.", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"{skipped} skipped: in progress, waiting, or with no stored body.",
                messages.WARNING,
            )

    @admin.action(description="Mark failed")
    def mark_failed(self, request, queryset):
        moved = services.messages_mark_failed(
            message_ids=queryset.values_list("pk", flat=True),
            reason=f"marked failed by {request.user.get_username()}",
        )
        self.message_user(request, f"{moved} message(s) marked failed.", messages.SUCCESS)


@admin.register(MailboxLease)
class MailboxLeaseAdmin(admin.ModelAdmin):
    list_display = ["mailbox", "owner", "token", "acquired_at", "renewed_at", "expires_at"]
    readonly_fields = ["mailbox", "owner", "token", "acquired_at", "renewed_at", "expires_at"]

    def has_add_permission(self, request):
        return False


@admin.register(InstanceHeartbeat)
class InstanceHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["instance_id", "host", "pid", "started_at", "last_seen", "stopping"]
    readonly_fields = list_display

    def has_add_permission(self, request):
        return False
