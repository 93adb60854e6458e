"""The catalogue in the admin: each config's current prices, searched by SKU, as of any
moment, and each SKU's history (pricefeed.catalogue). Read-only: only accepted imports
write it."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.formats import number_format
from django.utils.html import format_html
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.adminutils import EMPTY, AuditAdminMixin, moment_of, numbered, truncated, when

from . import catalogue, exports
from .models import CatalogueEntry, PriceListConfig

HISTORY = "history"


def amount(value: Decimal | None, *, places: int = 0) -> str:
    """A stored numeric(18, 4) as people write it, in the active language: at least
    ``places`` decimals, no trailing zeros past them (10.5000 → "10,50", 7.0000 → "7")."""
    if value is None:
        return EMPTY
    shown = value.normalize()
    exponent = shown.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -places:
        shown = value.quantize(Decimal(1).scaleb(-places))
    elif isinstance(exponent, int) and exponent > 0:
        shown = value.quantize(Decimal(1))
    return number_format(shown, use_l10n=True, force_grouping=True)


class VersionsFilter(admin.SimpleListFilter):
    """The current catalogue (the default), the catalogue as of a moment (``?as_of=``,
    ISO 8601, from the form above the list) or every version (a SKU's history)."""

    title = _("catalogue")
    parameter_name = "as_of"

    def lookups(self, request, model_admin):
        choices: list[tuple[str, Any]] = [
            ("", _("current")),
            (HISTORY, _("every version (history)")),
        ]
        moment = self.moment()
        if moment is not None:
            shown = date_format(timezone.localtime(moment), "Y-m-d H:i")
            choices.append((str(self.value()), gettext("as of %(time)s") % {"time": shown}))
        return choices

    def choices(self, changelist):
        # "current" is the list without the parameter: the default, shown selected.
        value = self.value()
        for lookup, title in self.lookup_choices:
            yield {
                "selected": (value or "") == lookup,
                "query_string": changelist.get_query_string(
                    {self.parameter_name: lookup} if lookup else {}, [self.parameter_name]
                ),
                "display": title,
            }

    def moment(self) -> datetime | None:
        value = self.value()
        if not value or value == HISTORY:
            return None
        try:
            return moment_of(value)
        except ValueError:
            raise IncorrectLookupParameters(value) from None

    def queryset(self, request, queryset):
        if self.value() == HISTORY:
            return queryset
        return queryset.filter(catalogue.current_at(self.moment()))


def _export_url(config_id: int, file_format: str, as_of: str) -> str:
    """A config's catalogue export, now or ``as_of`` (ISO 8601)."""
    url = reverse("admin:pricefeed_catalogueentry_export", args=[config_id, file_format])
    return f"{url}?{urlencode({'as_of': as_of})}" if as_of else url


@admin.register(CatalogueEntry)
class CatalogueEntryAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display = [
        "short_sku",
        "short_name",
        "short_price",
        "currency",
        "short_quantity",
        "since",
        "set_by",
    ]
    list_filter = [VersionsFilter, "config"]
    list_select_related = ["config"]
    search_fields = ["=sku", "sku__startswith"]
    search_help_text = _("A SKU, or its beginning.")
    show_full_result_count = False  # a million-row catalogue: no second COUNT(*)
    ordering = ["config", "sku", "-valid_from"]
    readonly_fields = [
        "config",
        "sku",
        "name",
        "price",
        "currency",
        "quantity",
        "price_import",
        "row_number",
        "valid_from",
        "valid_to",
        "ended_by",
    ]

    def get_urls(self):
        return [
            path(
                "export/<int:config_id>/<str:file_format>/",
                self.admin_site.admin_view(self.export_view),
                name="pricefeed_catalogueentry_export",
            ),
            path(
                "export/",
                self.admin_site.admin_view(self.export_choice_view),
                name="pricefeed_catalogueentry_export_choice",
            ),
            *super().get_urls(),
        ]

    def export_choice_view(self, request):
        """The export the unfiltered list's form asks for (``?config=&file_format=``,
        ``as_of`` kept): on to that config's export."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        config_id = request.GET.get("config", "")
        file_format = request.GET.get("file_format", "")
        if not config_id.isdigit() or file_format not in exports.FORMATS:
            raise Http404
        return redirect(_export_url(int(config_id), file_format, request.GET.get("as_of", "")))

    def export_view(self, request, config_id: int, file_format: str):
        """A config's catalogue (now, or ``?as_of=``) as a file (pricefeed.exports), for
        whoever may view the catalogue."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if file_format not in exports.FORMATS:
            raise Http404
        config = get_object_or_404(PriceListConfig, pk=config_id)
        as_of = None
        if request.GET.get("as_of"):
            try:
                as_of = moment_of(request.GET["as_of"])
            except ValueError:
                raise Http404 from None
        back = reverse("admin:pricefeed_catalogueentry_changelist")
        return exports.response(
            request,
            exports.catalogue_rows(config, as_of=as_of),
            file_format,
            stem=exports.stem(config, "catalogue" + (f"-{as_of:%Y%m%d-%H%M%S}" if as_of else "")),
            rows=lambda: catalogue.catalogue_current(config.pk, as_of=as_of).count(),
            back=f"{back}?config__id__exact={config.pk}",
        )

    def changelist_view(self, request, extra_context=None):
        """The export links of the config the list is filtered by (now or as of); on a
        list of every config, a form to export any one of them (pricefeed's catalogue is
        per config: one file is one config's)."""
        config_id = request.GET.get("config__id__exact", "")
        as_of = request.GET.get(VersionsFilter.parameter_name, "")
        as_of = as_of if as_of != HISTORY else ""
        context: dict[str, Any] = {"export_as_of": as_of}
        if config_id.isdigit():
            context["exports"] = [
                (_export_url(int(config_id), fmt, as_of), text)
                for fmt, text in exports.FORMATS.items()
            ]
        else:
            context["export_configs"] = PriceListConfig.objects.order_by("name").values_list(
                "pk", "name"
            )
            context["export_formats"] = exports.FORMATS.items()
        return super().changelist_view(request, {**context, **(extra_context or {})})

    def get_list_display(self, request):
        """The config's column when the list is not of one config, and "until" when it
        shows past values (as of a moment, or every version)."""
        columns = list(super().get_list_display(request))
        if "config__id__exact" not in request.GET:
            columns.insert(0, "config_name")
        if request.GET.get(VersionsFilter.parameter_name):
            columns.insert(columns.index("since") + 1, "until")
        return columns

    def get_search_results(self, request, queryset, search_term):
        # An exact SKU or its beginning: both use the (config, sku) indexes, where the
        # admin's default "contains" would read every entry.
        if not search_term:
            return queryset, False
        term = search_term.strip()
        return queryset.filter(Q(sku=term) | Q(sku__startswith=term)), False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # written by accepted imports only; deleted with them (superusers)

    @admin.display(description=_("sku"), ordering="sku")
    def short_sku(self, obj: CatalogueEntry) -> str:
        return truncated(obj.sku, width="s")

    @admin.display(description=_("name"), ordering="name")
    def short_name(self, obj: CatalogueEntry) -> str:
        return truncated(obj.name, width="l")

    @admin.display(description=_("config"), ordering="config__name")
    def config_name(self, obj: CatalogueEntry) -> str:
        return truncated(obj.config.name, width="s")

    @admin.display(description=_("price"), ordering="price")
    def short_price(self, obj: CatalogueEntry) -> str:
        return amount(obj.price, places=2)

    @admin.display(description=pgettext_lazy("short", "quantity"), ordering="quantity")
    def short_quantity(self, obj: CatalogueEntry) -> str:
        return amount(obj.quantity)

    @admin.display(description=_("current from"), ordering="valid_from")
    def since(self, obj: CatalogueEntry) -> str:
        return when(obj.valid_from)

    @admin.display(description=_("current until"), ordering="valid_to")
    def until(self, obj: CatalogueEntry) -> str:
        return when(obj.valid_to) if obj.valid_to else EMPTY

    @admin.display(description=_("import"), ordering="price_import_id")
    def set_by(self, obj: CatalogueEntry) -> str:
        """The import that set the value, and the SKU's history."""
        url = reverse("admin:pricefeed_priceimport_change", args=[obj.price_import_id])
        query = urlencode(
            {"config__id__exact": obj.config_id, "as_of": HISTORY, "sku__exact": obj.sku}
        )
        history = reverse("admin:pricefeed_catalogueentry_changelist")
        return format_html(
            '<a href="{}">{}</a> · <a href="{}?{}">{}</a>',
            url,
            numbered(obj.price_import_id),
            history,
            query,
            gettext("history"),
        )
