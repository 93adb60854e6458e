from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, Count, ExpressionWrapper, OuterRef, Subquery, Sum
from django.db.models.functions import Now
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from core.adminutils import (
    AuditAdminMixin,
    ListAdminMixin,
    SinceFilter,
    annotated,
    fields_without,
    truncated,
    when,
)
from core.claims import MARKED_FAILED_BY
from core.texts import Text

from . import leases, processing, selectors, services
from .filters import InstanceStateFilter, LeaseStateFilter, ListenedFilter
from .forms import MailboxForm
from .models import (
    IN_FLIGHT,
    InboundMessage,
    InstanceHeartbeat,
    Mailbox,
    MailboxCheckpoint,
    MailboxLease,
)
from .texts import shown, translated, translated_all
from .weights import listened_to, weight_expression

# The list columns, for the admins of apps that extend these pages (pricefeed).
MAILBOX_COLUMNS: tuple[str, ...] = (
    "short_name",
    "enabled",
    "address",
    "holder",
    "last_connected",
    "problem",
)
# Each fits a 1440 px window beside the navigation and the filters: the id and the
# attempts are on the message's page.
MESSAGE_COLUMNS: tuple[str, ...] = (
    "received",
    "short_mailbox",
    "status",
    "sender",
    "short_subject",
    "short_error",
)

# The states the selectors name (also in pricefeed_status's output), as people read them.
LEASE_STATES = {
    "mailbox disabled": _("mailbox disabled"),
    "free": _("free"),
    "release requested": _("release requested"),
    "held": _("held"),
}
INSTANCE_STATES = {"live": _("live"), "dead": _("dead"), "stopped": _("stopped")}


class CheckpointInline(admin.TabularInline):
    model = MailboxCheckpoint
    extra = 0
    can_delete = False
    readonly_fields = ["folder", "uidvalidity", "last_uid", "updated_at"]

    def has_add_permission(self, request, obj=None):
        return False


# The connection's security in a list's cell: the protocols by their names, no
# encryption in the reader's language.
SECURITY_SHORT: dict[str, str | Promise] = {
    Mailbox.Security.SSL: "SSL/TLS",
    Mailbox.Security.STARTTLS: "STARTTLS",
    Mailbox.Security.PLAIN: _("unencrypted"),
}


@admin.register(Mailbox)
class MailboxAdmin(ListAdminMixin, admin.ModelAdmin):
    form = MailboxForm
    list_display: tuple[str, ...] = MAILBOX_COLUMNS
    list_filter = ["enabled", "security", ListenedFilter]
    search_fields = ["name", "host", "username"]
    inlines = [CheckpointInline]
    actions = ["test_connection"]
    readonly_fields = [
        "last_connected_at",
        "shown_error",
        "last_error_at",
        "test_requested_at",
        "test_finished_at",
        "last_test",
        "created_at",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["name", "enabled"]}),
        (
            _("Server"),
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
            _("Status"),
            {
                "fields": [
                    "last_connected_at",
                    ("shown_error", "last_error_at"),
                    ("created_at", "updated_at"),
                ]
            },
        ),
        (
            _("Last connection test"),
            {"fields": [("test_requested_at", "test_finished_at"), "last_test"]},
        ),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("lease")
            .annotate(to_listen=ExpressionWrapper(listened_to(), output_field=BooleanField()))
        )

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or self.has_change_permission(request, obj):
            return fieldsets
        # A view-only page shows each field's stored value instead of the form's
        # write-only input: the password, decrypted.
        return [
            (name, {**options, "fields": fields_without(options["fields"], {"password"})})
            for name, options in fieldsets
        ]

    @admin.display(description=_("name"), ordering="name")
    def short_name(self, obj: Mailbox) -> str:
        return truncated(obj.name, width="s")

    @admin.display(description=_("server"))
    def address(self, obj: Mailbox) -> str:
        security = SECURITY_SHORT.get(obj.security, obj.security)
        return truncated(
            gettext("%(username)s on %(host)s:%(port)s, %(security)s")
            % {"username": obj.username, "host": obj.host, "port": obj.port, "security": security},
            width="m",
        )

    @admin.display(description=_("listener"))
    def holder(self, obj: Mailbox) -> str:
        lease = getattr(obj, "lease", None)
        if lease is None or not lease.owner:
            if obj.enabled and not annotated(obj, "to_listen"):
                # Saved before its configs: nothing is fetched until one is enabled.
                return truncated(gettext("not listened to: no enabled config"), width="s")
            return "—"
        if lease.expires_at and lease.expires_at < timezone.now():
            return truncated(gettext("%(owner)s (expired)") % {"owner": lease.owner}, width="s")
        return truncated(lease.owner, width="s")

    @admin.display(description=_("last connected"), ordering="last_connected_at")
    def last_connected(self, obj: Mailbox) -> str:
        return when(obj.last_connected_at)

    @admin.display(description=_("last error"))
    def problem(self, obj: Mailbox) -> str:
        if not obj.last_error:
            return ""
        return truncated(self.shown_error(obj), width="m", error=True)

    @admin.display(description=_("last error"))
    def shown_error(self, obj: Mailbox) -> str:
        """The last error in the reader's language."""
        return shown(obj, "last_error")

    def has_test_permission(self, request) -> bool:
        return request.user.has_perm("mailboxes.test_mailbox")

    @admin.action(
        description=_("Test connection (login and select the folder)"), permissions=["test"]
    )
    def test_connection(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        queued = services.mailbox_tests_request(mailbox_ids=ids)
        if queued:
            self.message_user(
                request,
                ngettext(
                    "%(count)d connection test queued: a worker runs it, and the mailbox's "
                    "page shows the result under “Last connection test”.",
                    "%(count)d connection tests queued: a worker runs each, and the "
                    "mailbox's page shows the result under “Last connection test”.",
                    len(queued),
                )
                % {"count": len(queued)},
                messages.SUCCESS,
            )
        if pending := len(ids) - len(queued):
            self.message_user(
                request,
                ngettext(
                    "%(count)d skipped: a test asked for less than %(seconds)d s ago has "
                    "not finished yet.",
                    "%(count)d skipped: a test asked for less than %(seconds)d s ago has "
                    "not finished yet.",
                    pending,
                )
                % {"count": pending, "seconds": round(services.pending_test_seconds())},
                messages.WARNING,
            )

    @admin.display(description=_("result"))
    def last_test(self, obj: Mailbox) -> str:
        if obj.test_requested_at is None:
            return gettext("never tested")
        if obj.test_finished_at is None:
            return gettext("queued: waiting for a worker")
        result = shown(obj, "test_result")
        return f"{'✔' if obj.test_succeeded else '✘'} {result}"


@admin.register(InboundMessage)
class InboundMessageAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display: tuple[str, ...] = MESSAGE_COLUMNS
    list_filter = ["status", SinceFilter.on("received_at"), "mailbox"]
    search_fields = ["subject", "from_address", "from_header", "message_id"]
    date_hierarchy = "received_at"
    actions = ["reprocess", "mark_failed"]
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
        "crashes",
        "claimed_by",
        "claimed_at",
        "next_attempt_at",
        "error_text",
        "warnings_list",
        "received_at",
        "finished_at",
        "raw_download",
        "report",
    ]
    fieldsets = [
        (None, {"fields": ["status", "error_text", "warnings_list", "report"]}),
        (
            _("Message"),
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
        (_("Where"), {"fields": ["mailbox", "folder", "uidvalidity", "uid", "dedup_key"]}),
        (
            _("Processing"),
            {
                "fields": [
                    ("attempts", "crashes"),
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
        return super().get_queryset(request).defer("raw", "match_report").select_related("mailbox")

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=_("received"), ordering="received_at")
    def received(self, obj: InboundMessage) -> str:
        return when(obj.received_at)

    @admin.display(description=_("mailbox"), ordering="mailbox__name")
    def short_mailbox(self, obj: InboundMessage) -> str:
        return truncated(obj.mailbox.name, width="s")

    @admin.display(description=_("from"), ordering="from_address")
    def sender(self, obj: InboundMessage) -> str:
        return truncated(obj.from_address or obj.from_header, width="m")

    @admin.display(description=_("subject"), ordering="subject")
    def short_subject(self, obj: InboundMessage) -> str:
        return truncated(obj.subject, width="l")

    @admin.display(description=_("last error"))
    def short_error(self, obj: InboundMessage) -> str:
        return truncated(shown(obj, "last_error"), width="s", error=True)

    @admin.display(description=_("last error"))
    def error_text(self, obj: InboundMessage) -> str:
        """The stored reason in the reader's language."""
        return shown(obj, "last_error") or "—"

    @admin.display(description=_("warnings"))
    def warnings_list(self, obj: InboundMessage) -> str:
        warnings = translated_all(obj.warnings)
        return format_html_join("\n", "<div>{}</div>", ((w,) for w in warnings)) or "—"

    @admin.display(description=_("raw message"))
    def raw_download(self, obj: InboundMessage) -> str:
        if not obj.sha256:
            return gettext("not stored (refused before download)")
        url = reverse("admin:mailboxes_inboundmessage_raw", args=[obj.pk])
        return format_html(
            '<a href="{}">{}</a>',
            url,
            gettext("download .eml (%(size)s bytes)") % {"size": obj.size},
        )

    @admin.display(description=_("match report"))
    def report(self, obj: InboundMessage) -> str:
        report = obj.match_report or {}
        if not report:
            return gettext("not processed yet")
        matched, no_match = gettext("✔ matched"), gettext("✘ no match")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    c["name"],
                    matched if c["matched"] else no_match,
                    "; ".join(translated_all(c["reasons"])),
                )
                for c in report.get("configs", [])
            ),
        )
        attachments = format_html_join(
            "",
            "<li>{} ({}, {})</li>",
            (
                (
                    a["filename"],
                    a["content_type"],
                    gettext("%(size)s bytes") % {"size": a["size"]},
                )
                for a in report.get("attachments", [])
            ),
        )
        extra = format_html_join(
            "",
            "<div>{}</div>",
            (
                (translated(d),)
                for d in report.get("defects", []) + ([report["note"]] if "note" in report else [])
            ),
        )
        # The sender's authentication verdict (mailboxes.authresults.SenderVerdict).
        auth = report.get("sender_auth") or {}
        if auth.get("authenticated"):
            state = gettext("✔ authenticated")
        elif auth.get("checked", True):
            state = gettext("✘ not authenticated")
        else:
            state = gettext("not checked")
        none = gettext("none")
        found = (
            format_html(
                "<div>{}</div>",
                gettext("authserv-id %(id)s: dmarc %(dmarc)s; dkim %(dkim)s; spf %(spf)s")
                % {
                    "id": auth["authserv_id"],
                    "dmarc": auth.get("dmarc") or none,
                    "dkim": ", ".join(auth.get("dkim") or []) or none,
                    "spf": auth.get("spf") or none,
                },
            )
            if auth.get("authserv_id")
            else ""
        )
        sender = format_html(
            "<p>{}</p>{}",
            gettext("Sender %(state)s: %(reason)s")
            % {"state": state, "reason": translated(auth.get("reason", ""))},
            found,
        )
        return format_html(
            "<table><tr><th>{}</th><th>{}</th><th>{}</th></tr>{}</table>{}<p>{}</p><ul>{}</ul>{}",
            gettext("config"),
            gettext("verdict"),
            gettext("why"),
            rows,
            sender if auth else "",
            gettext("Attachments:"),
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
        if not self.has_view_permission(request, message):
            raise PermissionDenied
        response = HttpResponse(bytes(message.raw or b""), content_type="message/rfc822")
        response["Content-Disposition"] = f'attachment; filename="message-{pk}.eml"'
        return response

    def has_reprocess_permission(self, request) -> bool:
        return request.user.has_perm("mailboxes.reprocess_inboundmessage")

    def has_fail_permission(self, request) -> bool:
        return request.user.has_perm("mailboxes.fail_inboundmessage")

    @admin.action(
        description=_("Reprocess (match again and create missing imports)"),
        permissions=["reprocess"],
    )
    def reprocess(self, request, queryset):
        moved = processing.messages_requeue(message_ids=queryset.values_list("pk", flat=True))
        skipped = queryset.count() - moved
        self.message_user(
            request,
            ngettext(
                "%(count)d message queued for processing.",
                "%(count)d messages queued for processing.",
                moved,
            )
            % {"count": moved},
            messages.SUCCESS,
        )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "%(count)d skipped: in progress, waiting, or with no stored body.",
                    "%(count)d skipped: in progress, waiting, or with no stored body.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )

    @admin.action(description=_("Mark failed"), permissions=["fail"])
    def mark_failed(self, request, queryset):
        moved = processing.messages_mark_failed(
            message_ids=queryset.values_list("pk", flat=True),
            reason=Text(MARKED_FAILED_BY, user=request.user.get_username()),
        )
        self.message_user(
            request,
            ngettext("%(count)d message marked failed.", "%(count)d messages marked failed.", moved)
            % {"count": moved},
            messages.SUCCESS,
        )


@admin.register(MailboxLease)
class MailboxLeaseAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "short_mailbox",
        "state",
        "short_owner",
        "token",
        "expires_in",
        "weight",
        "renewed",
    ]
    list_filter = [LeaseStateFilter, "owner"]
    readonly_fields = [
        "mailbox",
        "owner",
        "token",
        "acquired_at",
        "renewed_at",
        "expires_at",
        "release_requested",
    ]
    actions = ["force_release", "disable_mailbox"]

    def get_queryset(self, request):
        return selectors.leases_annotate(
            super().get_queryset(request).select_related("mailbox")
        ).annotate(weight_now=weight_expression("mailbox"))

    def has_add_permission(self, request):
        return False

    @admin.display(description=_("state"))
    def state(self, obj: MailboxLease) -> str:
        state = selectors.lease_state(
            enabled=obj.mailbox.enabled,
            owner=obj.owner,
            left=annotated(obj, "left"),
            release_requested=obj.release_requested,
        )
        return str(LEASE_STATES.get(state, state))

    @admin.display(description=_("mailbox"), ordering="mailbox__name")
    def short_mailbox(self, obj: MailboxLease) -> str:
        return truncated(obj.mailbox.name, width="s")

    @admin.display(description=_("owner"), ordering="owner")
    def short_owner(self, obj: MailboxLease) -> str:
        return truncated(obj.owner, width="s")

    @admin.display(description=_("expires in"), ordering="expires_at")
    def expires_in(self, obj: MailboxLease) -> str:
        if not obj.owner or annotated(obj, "left") is None:
            return "—"
        seconds = round(annotated(obj, "left").total_seconds())
        if seconds > 0:
            return gettext("%(seconds)d s") % {"seconds": seconds}
        return gettext("expired %(seconds)d s ago") % {"seconds": -seconds}

    @admin.display(description=_("renewed"), ordering="renewed_at")
    def renewed(self, obj: MailboxLease) -> str:
        return when(obj.renewed_at)

    @admin.display(description=_("weight"), ordering="weight_now")
    def weight(self, obj: MailboxLease) -> int:
        return annotated(obj, "weight_now")

    def has_release_permission(self, request) -> bool:
        return request.user.has_perm("mailboxes.release_mailboxlease")

    def has_disable_permission(self, request) -> bool:
        # Disabling is a change of the mailbox, not of its lease.
        return request.user.has_perm("mailboxes.change_mailbox")

    @admin.action(
        description=_("Force release (the owner stops; another instance takes over)"),
        permissions=["release"],
    )
    def force_release(self, request, queryset):
        asked = leases.leases_request_release(
            mailbox_ids=list(queryset.values_list("mailbox_id", flat=True))
        )
        self.message_user(
            request,
            ngettext(
                "%(count)d lease asked to be released: its owner stops at its next renewal "
                "and another instance takes over; a dead owner's lease expires by itself.",
                "%(count)d leases asked to be released: each owner stops at its next renewal "
                "and another instance takes over; a dead owner's lease expires by itself.",
                asked,
            )
            % {"count": asked},
            messages.SUCCESS,
        )

    @admin.action(
        description=_("Disable the mailbox (stop listening to it)"), permissions=["disable"]
    )
    def disable_mailbox(self, request, queryset):
        disabled = 0
        for mailbox in Mailbox.objects.filter(pk__in=queryset.values("mailbox_id"), enabled=True):
            mailbox.enabled = False
            mailbox.save(update_fields=["enabled", "updated_at"])  # tells the listeners
            disabled += 1
        self.message_user(
            request,
            ngettext("%(count)d mailbox disabled.", "%(count)d mailboxes disabled.", disabled)
            % {"count": disabled},
            messages.SUCCESS,
        )


@admin.register(InstanceHeartbeat)
class InstanceHeartbeatAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display = [
        "short_instance_id",
        "liveness",
        "last_seen_ago",
        "leases_held",
        "weight_held",
        "in_flight",
        "short_host",
        "pid",
        "started",
    ]
    list_filter = [InstanceStateFilter]
    readonly_fields = ["instance_id", "host", "pid", "started_at", "last_seen", "stopping"]

    def get_queryset(self, request):
        held = MailboxLease.objects.filter(
            owner=OuterRef("instance_id"), expires_at__gt=Now(), mailbox__enabled=True
        ).values("owner")
        return selectors.instances_annotate(super().get_queryset(request)).annotate(
            weight=Subquery(held.annotate(w=Sum(weight_expression("mailbox"))).values("w")),
            backlog=Subquery(
                InboundMessage.objects.filter(
                    mailbox__lease__owner=OuterRef("instance_id"), status__in=IN_FLIGHT
                )
                .order_by()
                .values("mailbox__lease__owner")
                .annotate(n=Count("pk"))
                .values("n")
            ),
        )

    @admin.display(description=_("state"))
    def liveness(self, obj: InstanceHeartbeat) -> str:
        state = selectors.instance_state(stopping=obj.stopping, seen_ago=annotated(obj, "ago"))
        label = INSTANCE_STATES.get(state, state)
        if state == "dead":
            return format_html('<span class="pf-error">{}</span>', label)
        return str(label)

    @admin.display(description=_("last seen"), ordering="last_seen")
    def last_seen_ago(self, obj: InstanceHeartbeat) -> str:
        # The age by the database's clock, as liveness is judged (not this server's).
        return when(obj.last_seen, now=obj.last_seen + annotated(obj, "ago"))

    @admin.display(description=_("instance"), ordering="instance_id")
    def short_instance_id(self, obj: InstanceHeartbeat) -> str:
        return truncated(obj.instance_id, width="m")

    @admin.display(description=_("host"), ordering="host")
    def short_host(self, obj: InstanceHeartbeat) -> str:
        return truncated(obj.host, width="s")

    @admin.display(description=_("started"), ordering="started_at")
    def started(self, obj: InstanceHeartbeat) -> str:
        return when(obj.started_at)

    @admin.display(description=_("leases"), ordering="n_leases")
    def leases_held(self, obj: InstanceHeartbeat) -> int:
        return annotated(obj, "n_leases") or 0

    @admin.display(description=_("weight held"), ordering="weight")
    def weight_held(self, obj: InstanceHeartbeat) -> int:
        return annotated(obj, "weight") or 0

    @admin.display(description=_("in flight"), ordering="backlog")
    def in_flight(self, obj: InstanceHeartbeat) -> int:
        """Messages of its mailboxes recorded but not yet finished (admission control)."""
        return annotated(obj, "backlog") or 0
