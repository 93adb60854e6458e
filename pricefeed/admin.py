from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import cast

from django.contrib import admin, messages
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db.models import Count, Exists, F, OuterRef, Q
from django.db.models.fields.json import KT, KeyTransform
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join, strip_tags
from django.utils.translation import gettext, ngettext, pgettext
from django.utils.translation import gettext_lazy as _

from core.adminutils import (
    EMPTY,
    AuditAdminMixin,
    ListAdminMixin,
    SinceFilter,
    annotated,
    duration,
    fields_without,
    label,
    numbered,
    truncated,
    when,
)
from mailboxes import admin as mailboxes_admin
from mailboxes.models import InboundMessage, Mailbox

from . import (
    admin_catalogue,  # noqa: F401  (registers the catalogue's admin)
    catalogue,
    exports,
)
from .admin_catalogue import amount
from .filters import ImportStatusFilter
from .forms import PreviewForm, PriceListConfigForm
from .imports import lifecycle, preview
from .models import PriceImport, PriceItem, PriceItemQuerySet, PriceListConfig, PriceType
from .selectors import overdue_configs, overdue_period, with_last_arrival
from .texts import shown, text_of, translated

PREVIEW_ROWS = 20
Status = PriceImport.Status
# Where the imports of a message stand, as its list row counts them.
OUTCOMES: dict[str, tuple[str, ...]] = {
    "ok": (Status.SUCCEEDED,),
    "failed": (Status.FAILED,),
    "partial": (Status.PARTIAL,),
    "waiting": (Status.PENDING, Status.RUNNING),
}
TROUBLE = (Status.FAILED, Status.PARTIAL)
# What an import's export needs beside viewing the import: what the API asks to read the
# same rows (its items: PriceItem; what it changed in the catalogue: CatalogueEntry).
EXPORT_PERMISSIONS = {"rows": "pricefeed.view_priceitem", "diff": "pricefeed.view_catalogueentry"}


# The config page's fieldset "Expected arrival" (pricefeed.schedule).
SCHEDULE_FIELDS = [
    "expected_every_hours",
    "expected_weekdays",
    "expected_by",
    "expected_timezone",
    "expected_grace_minutes",
]


# The config page's fieldset "Price sense" (pricefeed.catalogue).
PRICE_SENSE_FIELDS = [
    "allow_nonpositive_prices",
    "price_jump_percent",
    "hold_removed_percent",
    "hold_shrink_percent",
]


class OverdueFilter(admin.SimpleListFilter):
    """Configs whose expected list has not come (selectors.overdue_configs)."""

    title = _("list overdue")
    parameter_name = "overdue"

    def lookups(self, request, model_admin):
        return [("yes", _("Yes")), ("no", _("No"))]

    def queryset(self, request, queryset):
        if self.value() not in ("yes", "no"):
            return queryset
        overdue = [found.config.pk for found in overdue_configs()]
        if self.value() == "yes":
            return queryset.filter(pk__in=overdue)
        return queryset.exclude(pk__in=overdue)


@admin.register(PriceListConfig)
class PriceListConfigAdmin(ListAdminMixin, admin.ModelAdmin):
    form = PriceListConfigForm
    # The subject pattern and the preview link are on the config's page.
    list_display = [
        "short_name",
        "short_mailbox",
        "enabled",
        "sender",
        "filename",
        "short_mode",
        "overdue",
    ]  # sender auth: a filter and on the config's page (the list fits 1440 px)
    list_filter = ["enabled", OverdueFilter, "mailbox", "sender_auth", "mode"]
    list_select_related = ["mailbox"]
    search_fields = ["name", "sender_pattern", "subject_pattern", "filename_pattern"]
    readonly_fields = ["preview_link"]

    def get_queryset(self, request):
        # The latest arrival and the database's time, for the "overdue" column.
        return with_last_arrival(super().get_queryset(request))

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # How a column given as two letters ("ID") will be read: saved, but said.
        for note in getattr(form, "column_notes", ()):
            self.message_user(request, note, messages.WARNING)

    def get_fieldsets(self, request, obj=None):
        grouped = (*SCHEDULE_FIELDS, *PRICE_SENSE_FIELDS)
        # The preview is an operator's (preview_view): not offered to whom it refuses.
        if not self.has_change_permission(request, obj):
            grouped += ("preview_link",)
        fields = [f for f in self.get_fields(request, obj) if f not in grouped]
        return [
            (None, {"fields": fields}),
            (
                _("Price sense"),
                {
                    "fields": PRICE_SENSE_FIELDS,
                    "description": _(
                        "What a list may do before it becomes the current catalogue: a "
                        "price change beyond the share is flagged; a list that removes or "
                        "drops too much of a catalogue of 20 items or more waits for an "
                        "operator to approve it (Price imports, action Approve)."
                    ),
                },
            ),
            (
                _("Expected arrival"),
                {
                    "fields": SCHEDULE_FIELDS,
                    "description": _(
                        "Every N hours, or on weekdays by a time of day; a list that has "
                        "not come by then (and the grace) is flagged on the front page and "
                        "mailed once to the subscribers who want overdue lists."
                    ),
                },
            ),
        ]

    @admin.display(description=_("overdue"))
    def overdue(self, obj: PriceListConfig) -> str:
        """Since when its expected list is overdue; "no" when on time; — when no list is
        expected."""
        if not (obj.expected_every_hours or obj.expected_by):
            return EMPTY
        period = overdue_period(obj)
        if period is None:
            return gettext("no")
        return when(period.due, now=annotated(obj, "checked_at"))

    @admin.display(description=_("name"), ordering="name")
    def short_name(self, obj: PriceListConfig) -> str:
        return truncated(obj.name, width="m")

    @admin.display(description=_("mailbox"), ordering="mailbox__name")
    def short_mailbox(self, obj: PriceListConfig) -> str:
        return truncated(obj.mailbox.name, width="s")

    @admin.display(description=_("sender auth"), ordering="sender_auth")
    def auth(self, obj: PriceListConfig) -> str:
        return label(obj, "sender_auth")

    @admin.display(description=_("mode"), ordering="mode")
    def short_mode(self, obj: PriceListConfig) -> str:
        return label(obj, "mode")

    @admin.display(description=_("sender pattern"), ordering="sender_pattern")
    def sender(self, obj: PriceListConfig) -> str:
        return truncated(obj.sender_pattern, width="s")

    @admin.display(description=_("subject pattern"), ordering="subject_pattern")
    def subject(self, obj: PriceListConfig) -> str:
        return truncated(obj.subject_pattern, width="s")

    @admin.display(description=_("file name pattern"), ordering="filename_pattern")
    def filename(self, obj: PriceListConfig) -> str:
        return truncated(obj.filename_pattern, width="s")

    @admin.display(description=_("preview"))
    def preview_link(self, obj: PriceListConfig) -> str:
        if not obj.pk:
            return gettext("save the config first")
        url = reverse("admin:pricefeed_pricelistconfig_preview", args=[obj.pk])
        return format_html(
            '<a href="{}">{}</a>', url, gettext("Preview a file against this config")
        )

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
        """Parses an uploaded file as this config would and shows the first rows. An
        operator's (change permission on configs): reading an upload costs the server
        CPU and memory, which a read-only viewer has no call to spend."""
        config = get_object_or_404(PriceListConfig, pk=pk)
        if not self.has_change_permission(request, config):
            raise PermissionDenied
        form = PreviewForm(request.POST or None, request.FILES or None)
        results = None
        if request.method == "POST" and form.is_valid():
            results = preview.preview_upload(
                config=config, upload=form.cleaned_data["file"], rows=PREVIEW_ROWS
            )
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Preview a file against “%(config)s”") % {"config": config},
            "opts": self.model._meta,
            "original": config,
            "form": form,
            "results": results,
            "preview_rows": PREVIEW_ROWS,
        }
        return TemplateResponse(request, "admin/pricefeed/pricelistconfig/preview.html", context)


def _price(stored: str | None) -> str:
    """A price the diff stored ("1234.5") as the catalogue shows one, in the reader's
    language ("1234,50" in Russian)."""
    try:
        return amount(Decimal(stored), places=2) if stored is not None else EMPTY
    except (InvalidOperation, TypeError):
        return str(stored)


ATTACHMENT_KEY = re.compile(r"part(\d+)(?:/(.+))?", re.DOTALL)


def attachment_label(key: str) -> str:
    """An attachment key (``part<N>`` or ``part<N>/<path in the archive>``) in words."""
    found = ATTACHMENT_KEY.fullmatch(key or "")
    if found is None:
        return key or EMPTY
    number, inner = found.groups()
    if inner:
        return gettext("attachment %(number)s, %(path)s in the archive") % {
            "number": number,
            "path": inner,
        }
    return gettext("attachment %(number)s") % {"number": number}


def _parse_info_rows(info: dict) -> Iterator[tuple[str, object]]:
    """The lines of the file-reading summary: (label, value) in the reader's language;
    what the next import reads (digests, repeated SKUs) stays on the import only."""
    if info.get("sheet") is not None:
        yield gettext("sheet"), info["sheet"]
    if info.get("encoding"):
        yield pgettext("file reading", "encoding"), info["encoding"]
    if info.get("delimiter"):
        yield pgettext("file reading", "delimiter"), f"«{info['delimiter']}»"
    if info.get("header_row") is not None:
        yield gettext("header row"), info["header_row"]
    for field, header in (info.get("columns") or {}).items():
        yield gettext("column of the %(field)s") % {"field": column_label(field)}, header
    yield gettext("rows with errors"), info.get("errors_total", 0)
    if info.get("skipped_headings"):
        yield gettext("group headings skipped"), info["skipped_headings"]
    if info.get("skipped_totals"):
        yield gettext("total rows skipped"), info["skipped_totals"]
    for warning in info.get("warnings") or []:
        yield pgettext("file reading", "warning"), translated(warning)


def column_label(field: str) -> str:
    """A column mapping's key named as the price item's field it fills."""
    try:
        return str(PriceItem._meta.get_field(field).verbose_name)  # type: ignore[union-attr]
    except FieldDoesNotExist:
        return field


def file_reading_table(info: dict) -> str:
    """How the file was read (an import's parse_info), as a table of two columns."""
    if not info:
        return EMPTY
    return format_html(
        "<table>{}</table>",
        format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", _parse_info_rows(info)),
    )


def _price_types_diff(price_types: dict[str, dict], percent: object) -> str:
    """The diff of each other price type (imports.diff: ``price_types``), by its name."""
    if not price_types:
        return ""
    names = dict(PriceType.objects.values_list("code", "name"))
    return format_html_join(
        "",
        "<div>{}</div><ul>{}</ul>",
        (
            (
                gettext(
                    "%(type)s: %(changed)s price(s) changed, %(jumps)s by more than %(percent)s%%"
                )
                % {
                    "type": names.get(code, code),
                    "changed": entry.get("changed", 0),
                    "jumps": entry.get("jumps", 0),
                    "percent": percent,
                },
                format_html_join(
                    "",
                    "<li>{}: {} → {}</li>",
                    (
                        (c["sku"], _price(c["old"]), _price(c["new"]))
                        for c in entry.get("changed_sample", [])[:10]
                    ),
                ),
            )
            for code, entry in sorted(price_types.items())
        ),
    )


@admin.register(PriceType)
class PriceTypeAdmin(ListAdminMixin, admin.ModelAdmin):
    """The price types configs map their price columns to (опт, розница, РРЦ): viewers
    see them, operators keep them (access.roles)."""

    list_display = ["code", "name", "position"]
    list_editable = ["name", "position"]
    search_fields = ["code", "name"]
    ordering = ["position", "code"]


@admin.register(PriceImport)
class PriceImportAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display = [
        "created",
        "config_name",
        "short_filename",
        "short_status",
        "rows",
        "reason",
        "duration",
        "message_link",
    ]
    list_filter = [
        ImportStatusFilter,
        SinceFilter.on("created_at"),
        "review",
        "config__mailbox",
        "config",
        "format",
    ]
    search_fields = ["filename", "sha256", "message__subject"]
    date_hierarchy = "created_at"
    actions = ["rerun_failed", "approve_held", "reject_held"]
    readonly_fields = [
        "review_state",
        "accepted_at",
        "reviewed_by",
        "reviewed_at",
        "catalogue_link",
        "message_link",
        "config",
        "attachment",
        "filename",
        "content_type",
        "size",
        "sha256",
        "status",
        "format",
        "error",
        "rows_total",
        "rows_ok",
        "rows_failed",
        "rows_skipped",
        "items_link",
        "export_links",
        "parse_info_table",
        "diff_summary",
        "row_errors",
        "attempts",
        "crashes",
        "cells_charged",
        "claimed_by",
        "claimed_at",
        "next_attempt_at",
        "created_at",
        "started_at",
        "finished_at",
        "duration",
    ]
    fieldsets = [
        (None, {"fields": ["status", "error", "config", "message_link", "filename"]}),
        (
            _("Rows"),
            {
                "fields": [
                    ("rows_total", "rows_ok", "rows_failed", "rows_skipped"),
                    "items_link",
                    "export_links",
                ]
            },
        ),
        (
            _("Catalogue"),
            {
                "fields": [
                    "review_state",
                    "accepted_at",
                    ("reviewed_by", "reviewed_at"),
                    "catalogue_link",
                ]
            },
        ),
        (_("Changes against the current catalogue"), {"fields": ["diff_summary"]}),
        (_("Row errors"), {"fields": ["row_errors"]}),
        (
            _("File"),
            {
                "fields": [
                    "attachment",
                    "content_type",
                    "size",
                    "sha256",
                    "format",
                    "parse_info_table",
                ]
            },
        ),
        (
            _("Run"),
            {
                "fields": [
                    ("attempts", "crashes"),
                    "cells_charged",
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
            .annotate(
                run_time=F("finished_at") - F("started_at"),
                # A PARTIAL import's reason is its first row error: read in SQL, so the
                # list loads no import's whole list of them.
                first_error_row=KT("errors__0__row"),
                first_error=KeyTransform("error", KeyTransform("0", "errors")),
            )
        )

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, obj: PriceImport) -> str:
        return when(obj.created_at)

    @admin.display(description=_("config"), ordering="config__name")
    def config_name(self, obj: PriceImport) -> str:
        return truncated(obj.config.name, width="s")

    @admin.display(description=_("file"), ordering="filename")
    def short_filename(self, obj: PriceImport) -> str:
        return truncated(obj.filename or attachment_label(obj.attachment_key), width="s")

    @admin.display(description=_("status"), ordering="status")
    def short_status(self, obj: PriceImport) -> str:
        if obj.review == PriceImport.Review.HELD:
            return format_html(
                '{} · <span class="pf-error">{}</span>',
                label(obj, "status"),
                pgettext("price import", "held"),
            )
        if obj.review == PriceImport.Review.REJECTED:
            return format_html(
                "{} · {}", label(obj, "status"), pgettext("price import", "rejected")
            )
        return label(obj, "status")

    @admin.display(description=_("review"))
    def review_state(self, obj: PriceImport) -> str:
        """Whether its rows are current, wait for an operator, or were turned down."""
        if obj.review == PriceImport.Review.HELD:
            return format_html(
                '<span class="pf-error">{}</span>: {}',
                label(obj, "review"),
                shown(obj, "review_reason"),
            )
        if obj.review:
            return label(obj, "review")
        if obj.accepted_at:
            return gettext("current at once (nothing to review)")
        return EMPTY

    @admin.display(description=_("catalogue"))
    def catalogue_link(self, obj: PriceImport) -> str:
        url = reverse("admin:pricefeed_catalogueentry_changelist")
        return format_html(
            '<a href="{}?config__id__exact={}">{}</a>',
            url,
            obj.config_id,
            gettext("The current catalogue of %(config)s") % {"config": obj.config.name},
        )

    @admin.display(description=_("rows (ok / failed)"), ordering="rows_ok")
    def rows(self, obj: PriceImport) -> str:
        if obj.status == Status.RUNNING:
            # Rows read so far, written every few seconds by the running import.
            return truncated(obj.progress_display() or gettext("starting"), width="s")
        if obj.status == Status.PENDING:
            return EMPTY
        if obj.rows_failed:
            return format_html(
                '{} / <span class="pf-error">{}</span>', obj.rows_ok, obj.rows_failed
            )
        return f"{obj.rows_ok} / 0"

    @admin.display(description=_("reason"))
    def reason(self, obj: PriceImport) -> str:
        """Why it FAILED (its last error), why it is PARTIAL (how many rows failed, and
        the first of them), or what went wrong before a retry."""
        if obj.status == Status.PARTIAL and not obj.last_error:
            text = ngettext("%(count)d row failed", "%(count)d rows failed", obj.rows_failed) % {
                "count": obj.rows_failed
            }
            if first := annotated(obj, "first_error"):
                text = gettext("%(failed)s; row %(row)s: %(error)s") % {
                    "failed": text,
                    "row": annotated(obj, "first_error_row"),
                    "error": translated(first),
                }
            return truncated(text, width="l", error=True)
        return truncated(shown(obj, "last_error"), width="l", error=obj.status == Status.FAILED)

    @admin.display(description=_("last error"))
    def error(self, obj: PriceImport) -> str:
        """The last error in the reader's language."""
        return shown(obj, "last_error") or EMPTY

    @admin.display(description=_("duration"), ordering="run_time")
    def duration(self, obj: PriceImport) -> str:
        return duration(getattr(obj, "run_time", None))

    @admin.display(description=_("message"), ordering="message_id")
    def message_link(self, obj: PriceImport) -> str:
        url = reverse("admin:mailboxes_inboundmessage_change", args=[obj.message_id])
        return format_html(
            '<a href="{}">{}</a>',
            url,
            truncated(f"{numbered(obj.message_id)} {obj.message.subject}", width="s"),
        )

    @admin.display(description=_("price items"))
    def items_link(self, obj: PriceImport) -> str:
        url = reverse("admin:pricefeed_priceitem_changelist") + f"?price_import__id__exact={obj.pk}"
        return format_html(
            '<a href="{}">{}</a>',
            url,
            ngettext("%(count)d item", "%(count)d items", obj.rows_ok) % {"count": obj.rows_ok},
        )

    def get_fieldsets(self, request, obj=None):
        """The export links only for whoever may have every file (export_view)."""
        fieldsets = super().get_fieldsets(request, obj)
        if all(request.user.has_perm(p) for p in EXPORT_PERMISSIONS.values()):
            return fieldsets
        return [
            (name, {**options, "fields": fields_without(options["fields"], {"export_links"})})
            for name, options in fieldsets
        ]

    @admin.display(description=_("export"))
    def export_links(self, obj: PriceImport) -> str:
        """Links to the rows and the diff as CSV (";" for Russian Excel, ",") and xlsx."""
        if obj.status not in (Status.SUCCEEDED, Status.PARTIAL):
            return EMPTY
        lines = [("rows", gettext("Export rows:"))]
        if obj.diff:
            lines.append(("diff", gettext("Export diff:")))
        return format_html_join(
            "",
            "<div>{} {}</div>",
            (
                (
                    heading,
                    format_html_join(
                        " · ",
                        '<a href="{}">{}</a>',
                        (
                            (
                                reverse(
                                    f"admin:pricefeed_priceimport_export_{what}",
                                    args=[obj.pk, file_format],
                                ),
                                text,
                            )
                            for file_format, text in exports.FORMATS.items()
                        ),
                    ),
                )
                for what, heading in lines
            ),
        )

    def get_urls(self):
        return [
            path(
                f"<int:pk>/export/{what}/<str:file_format>/",
                self.admin_site.admin_view(self.export_view),
                {"what": what},
                name=f"pricefeed_priceimport_export_{what}",
            )
            for what in ("rows", "diff")
        ] + super().get_urls()

    def export_view(self, request, pk: int, what: str, file_format: str):
        """An import's rows or diff as a file (pricefeed.exports), for whoever may view
        the import and what the file holds, as the API asks (EXPORT_PERMISSIONS)."""
        price_import = get_object_or_404(PriceImport.objects.select_related("config"), pk=pk)
        if not self.has_view_permission(request, price_import) or not request.user.has_perm(
            EXPORT_PERMISSIONS[what]
        ):
            raise PermissionDenied
        if file_format not in exports.FORMATS or (what == "diff" and not price_import.diff):
            raise Http404
        table = (
            exports.import_rows(price_import)
            if what == "rows"
            else exports.import_diff(price_import)
        )
        diff = price_import.diff or {}
        return exports.response(
            request,
            table,
            file_format,
            stem=exports.stem(price_import.config, f"{price_import.pk}-{what}"),
            rows=lambda: (
                price_import.rows_ok
                if what == "rows"
                else sum(diff.get(k, 0) for k in ("added", "removed", "changed", "unreadable"))
            ),
            back=reverse("admin:pricefeed_priceimport_change", args=[price_import.pk]),
        )

    @admin.display(description=_("diff"))
    def diff_summary(self, obj: PriceImport) -> str:
        diff = obj.diff or {}
        if not diff:
            return EMPTY
        if diff.get("previous_import") is None:
            added = diff.get("added", 0)
            return ngettext(
                "first import of this config: %(count)d item",
                "first import of this config: %(count)d items",
                added,
            ) % {"count": added}
        changed = format_html_join(
            "",
            "<li>{}: {} → {}</li>",
            (
                (c["sku"], _price(c["old"]), _price(c["new"]))
                for c in diff.get("changed_sample", [])
            ),
        )
        summary = gettext(
            "against the catalogue (current since import #%(previous)s): %(added)s added, "
            "%(removed)s removed, %(changed)s price(s) changed"
        ) % {
            "previous": diff["previous_import"],
            "added": diff.get("added", 0),
            "removed": diff.get("removed", 0),
            "changed": diff.get("changed", 0),
        }
        jumps = format_html_join(
            "",
            '<li class="pf-error">{}: {} → {}</li>',
            ((c["sku"], _price(c["old"]), _price(c["new"])) for c in diff.get("jumps_sample", [])),
        )
        added = ", ".join(diff.get("added_sample", [])) or EMPTY
        removed = ", ".join(diff.get("removed_sample", [])) or EMPTY
        unreadable = ", ".join(diff.get("unreadable_sample", [])) or EMPTY
        return format_html(
            "{}<ul>{}</ul><div>{}</div><ul>{}</ul>{}<div>{}</div><div>{}</div><div>{}</div>",
            summary,
            changed,
            gettext("prices that changed by more than %(percent)s%%: %(count)s")
            % {"percent": diff.get("jump_percent", "—"), "count": diff.get("jumps", 0)},
            jumps,
            _price_types_diff(diff.get("price_types") or {}, diff.get("jump_percent", "—")),
            gettext("added: %(skus)s") % {"skus": added},
            gettext("removed: %(skus)s") % {"skus": removed},
            gettext("unreadable rows, previous value kept: %(skus)s") % {"skus": unreadable},
        )

    @admin.display(description=_("attachment"), ordering="attachment_key")
    def attachment(self, obj: PriceImport) -> str:
        return attachment_label(obj.attachment_key)

    @admin.display(description=_("how the file was read"))
    def parse_info_table(self, obj: PriceImport) -> str:
        return file_reading_table(obj.parse_info or {})

    @admin.display(description=_("row errors"))
    def row_errors(self, obj: PriceImport) -> str:
        if not obj.errors:
            return EMPTY
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td></tr>",
            ((e["row"], translated(e["error"])) for e in obj.errors),
        )
        total = (obj.parse_info or {}).get("errors_total", len(obj.errors))
        heading = (
            gettext("error (first %(shown)d of %(total)d)")
            % {"shown": len(obj.errors), "total": total}
            if total > len(obj.errors)
            else gettext("error")
        )
        return format_html(
            "<table><tr><th>{}</th><th>{}</th></tr>{}</table>", gettext("row"), heading, rows
        )

    def has_rerun_permission(self, request) -> bool:
        return request.user.has_perm("pricefeed.rerun_priceimport")

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm("pricefeed.review_priceimport")

    @admin.action(description=_("Approve held imports (make them current)"), permissions=["review"])
    def approve_held(self, request, queryset):
        count = self._review(request, queryset, catalogue.import_approve)
        if count:
            self.message_user(
                request,
                ngettext(
                    "%(count)d import approved: its rows are current.",
                    "%(count)d imports approved: their rows are current.",
                    count,
                )
                % {"count": count},
                messages.SUCCESS,
            )

    @admin.action(description=_("Reject held imports"), permissions=["review"])
    def reject_held(self, request, queryset):
        count = self._review(request, queryset, catalogue.import_reject)
        if count:
            self.message_user(
                request,
                ngettext("%(count)d import rejected.", "%(count)d imports rejected.", count)
                % {"count": count},
                messages.SUCCESS,
            )

    def _review(self, request, queryset, decide) -> int:
        """Decides on each import, the oldest first; says why one could not be."""
        count = 0
        for import_id in queryset.order_by("created_at", "pk").values_list("pk", flat=True):
            try:
                decide(import_id=import_id, user=request.user.get_username())
            except catalogue.ReviewRefused as refused:
                self.message_user(request, translated(text_of(refused)), messages.WARNING)
            else:
                count += 1
        return count

    @admin.action(description=_("Run failed imports again"), permissions=["rerun"])
    def rerun_failed(self, request, queryset):
        moved = lifecycle.price_imports_requeue(import_ids=queryset.values_list("pk", flat=True))
        self.message_user(
            request,
            ngettext("%(count)d import queued again.", "%(count)d imports queued again.", moved)
            % {"count": moved},
            messages.SUCCESS,
        )
        if skipped := queryset.count() - moved:
            self.message_user(
                request,
                ngettext(
                    "%(count)d skipped: not FAILED.", "%(count)d skipped: not FAILED.", skipped
                )
                % {"count": skipped},
                messages.WARNING,
            )


@admin.register(PriceItem)
class PriceItemAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = ["sku", "short_name", "price", "currency", "quantity", "row_number", "of_import"]
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
        # rows digest stands for): they go only with their import, for superusers too.
        return False

    @admin.display(description=_("name"), ordering="name")
    def short_name(self, obj: PriceItem) -> str:
        return truncated(obj.name, width="l")

    @admin.display(description=_("import"), ordering="price_import")
    def of_import(self, obj: PriceItem) -> str:
        return truncated(str(obj.price_import), width="m")


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
        *mailboxes_admin.MAILBOX_COLUMNS[:3],
        "configs_enabled",
        *mailboxes_admin.MAILBOX_COLUMNS[3:],
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_configs=Count("configs", distinct=True))

    @admin.display(description=_("configs"), ordering="n_configs")
    def configs_enabled(self, obj: Mailbox) -> int:
        return annotated(obj, "n_configs")


class ImportOutcomeFilter(admin.SimpleListFilter):
    """Messages by what became of their imports: a message is DONE once its imports are
    made, whatever each of them ends as, so its own status does not show a FAILED or
    PARTIAL import."""

    title = _("imports")
    parameter_name = "imports"
    FAILED_OR_PARTIAL = "failed_or_partial"
    WAITING = "waiting"
    NONE = "none"

    def lookups(self, request, model_admin):
        return [
            (self.FAILED_OR_PARTIAL, _("has failed or partial imports")),
            (self.WAITING, _("has imports waiting or running")),
            (self.NONE, _("made no import")),
        ]

    def queryset(self, request, queryset):
        imports = PriceImport.objects.filter(message=OuterRef("pk"))
        value = self.value()
        if value == self.FAILED_OR_PARTIAL:
            return queryset.filter(Exists(imports.filter(status__in=TROUBLE)))
        if value == self.WAITING:
            return queryset.filter(Exists(imports.filter(status__in=OUTCOMES["waiting"])))
        if value == self.NONE:
            return queryset.filter(~Exists(imports))
        return queryset


admin.site.unregister(InboundMessage)


@admin.register(InboundMessage)
class InboundMessageAdmin(mailboxes_admin.InboundMessageAdmin):
    """The inbound message page, with the imports each message made; its list row
    counts their outcomes."""

    inlines = [*mailboxes_admin.InboundMessageAdmin.inlines, PriceImportInline]
    # The outcome of its imports right after the message's own status.
    list_display = (
        *mailboxes_admin.MESSAGE_COLUMNS[:3],
        "imports_outcome",
        *mailboxes_admin.MESSAGE_COLUMNS[3:],
    )
    list_filter = [*mailboxes_admin.InboundMessageAdmin.list_filter, ImportOutcomeFilter]

    def get_queryset(self, request):
        # One query for the page: the counts come with the rows (a join and GROUP BY).
        counts = {
            f"n_{name}": Count("imports", filter=Q(imports__status__in=statuses))
            for name, statuses in OUTCOMES.items()
        }
        return super().get_queryset(request).annotate(n_imports=Count("imports"), **counts)

    @admin.display(description=_("imports"), ordering="n_imports")
    def imports_outcome(self, obj: InboundMessage) -> str:
        """``2 ok, 1 failed, 1 partial``; failed and partial in red."""
        labels = {
            "ok": gettext("%(count)d ok"),
            "failed": gettext("%(count)d failed"),
            "partial": gettext("%(count)d partial"),
            "waiting": gettext("%(count)d waiting"),
        }
        parts = []
        for name, template in labels.items():
            if count := annotated(obj, f"n_{name}"):
                text = template % {"count": count}
                trouble = name in ("failed", "partial")
                parts.append(
                    format_html('<span class="pf-error">{}</span>', text) if trouble else text
                )
        if not parts:
            return EMPTY
        # Cut like any long text (the words are longer in some languages), whole on hover.
        return format_html(
            '<span class="pf-cell pf-s" title="{}">{}</span>',
            ", ".join(strip_tags(p) for p in parts),
            format_html_join(", ", "{}", ((p,) for p in parts)),
        )
