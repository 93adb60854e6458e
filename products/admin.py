"""Our products in the admin: the list (searched by code, name, article or barcode;
filtered by active or retired, brand, top category) and the product's page with, read
only, every supplier's current offer, the proposed links apart, and the offers' history
(products.selectors)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.adminutils import EMPTY, ListAdminMixin, truncated, when
from pricefeed.admin_catalogue import amount
from pricefeed.parsing.values import BARCODE_LENGTHS, checksum_ok

from . import keys, selectors
from .events import products_changed
from .models import Product, SupplierLink

State = SupplierLink.State


class ActiveFilter(admin.SimpleListFilter):
    title = pgettext_lazy("product", "active")
    parameter_name = "active"

    def lookups(self, request, model_admin):
        return [("yes", _("active")), ("no", _("retired"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(retired_at__isnull=True)
        if self.value() == "no":
            return queryset.filter(retired_at__isnull=False)
        return queryset


class TopCategoryFilter(admin.SimpleListFilter):
    """By the category's first level ("Крепёж" of "Крепёж / Болты"); the levels read
    once per catalogue version (a scan of a million products on every page before)."""

    title = _("category")
    parameter_name = "category"
    SHOWN = 100

    def lookups(self, request, model_admin):
        return [(top, top) for top in keys.per_catalogue("top_categories", self._tops)]

    def _tops(self) -> list[str]:
        tops: set[str] = set()
        categories = Product.objects.exclude(category="").values_list("category", flat=True)
        for category in categories.distinct()[:5000]:
            tops.add(category.split(" / ", 1)[0])
        return sorted(tops)[: self.SHOWN]

    def queryset(self, request, queryset):
        value = self.value()
        if value:
            return queryset.filter(Q(category=value) | Q(category__startswith=value + " / "))
        return queryset


class BrandFilter(admin.SimpleListFilter):
    """By brand: the most frequent brands (a catalogue may have thousands), counted once
    per catalogue version."""

    title = _("brand")
    parameter_name = "brand"
    SHOWN = 50

    def lookups(self, request, model_admin):
        return [(brand, brand) for brand in keys.per_catalogue("top_brands", self._brands)]

    def _brands(self) -> list[str]:
        brands = (
            Product.objects.exclude(brand="")
            .values("brand")
            .annotate(n=Count("id"))
            .order_by("-n", "brand")[: self.SHOWN]
        )
        return [row["brand"] for row in brands]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(brand=value) if value else queryset


class ProductForm(forms.ModelForm):
    class Meta:
        model = Product
        fields = ["own_code", "name", "brand", "article", "barcodes", "unit", "category"]

    def clean_barcodes(self):
        codes = [code.strip() for code in self.cleaned_data.get("barcodes") or [] if code.strip()]
        for code in codes:
            if not (code.isdigit() and code.isascii() and len(code) in BARCODE_LENGTHS):
                raise forms.ValidationError(
                    gettext("%(barcode)s is not an EAN-8, UPC-A, EAN-13 or GTIN-14")
                    % {"barcode": code}
                )
            if not checksum_ok(code):
                raise forms.ValidationError(
                    gettext("%(barcode)s: wrong check digit") % {"barcode": code}
                )
        return codes


def _links_count() -> Coalesce:
    # A subquery per shown row: a GROUP BY over a million products would be counted
    # before the page is cut.
    counted = (
        SupplierLink.objects.filter(product=OuterRef("pk"))
        .exclude(state=State.REJECTED)
        .values("product")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


@admin.register(Product)
class ProductAdmin(ListAdminMixin, admin.ModelAdmin):
    form = ProductForm
    list_display = [
        "short_code",
        "short_name",
        "short_brand",
        "short_article",
        "short_category",
        "is_active",
        "links",
    ]
    list_filter = [ActiveFilter, BrandFilter, TopCategoryFilter]
    search_fields = ["own_code"]  # the search box; get_search_results says how
    search_help_text = _("Own code (or its beginning), article, barcode or words of the name.")
    show_full_result_count = False  # a million products: no second COUNT(*)
    ordering = ["own_code"]
    readonly_fields = [
        "retired_at",
        "created_at",
        "updated_at",
        "offers",
        "proposed",
        "history",
    ]
    fieldsets = [
        (None, {"fields": ["own_code", "name", ("brand", "article"), "barcodes", "unit"]}),
        (None, {"fields": ["category", "retired_at", ("created_at", "updated_at")]}),
        (_("Suppliers' offers"), {"fields": ["offers", "proposed"]}),
        (_("Offers' history"), {"classes": ["collapse"], "fields": ["history"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(links_count=_links_count())

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:  # nothing is offered for a product not yet saved
            return [(None, {"fields": ["own_code", "name", ("brand", "article"), "barcodes"]}),
                    (None, {"fields": ["unit", "category"]})]  # fmt: skip
        return fieldsets

    def get_search_results(self, request, queryset, search_term):
        term = " ".join(search_term.split())
        if not term:
            return queryset, False
        found = (
            Q(own_code=term)
            | Q(own_code__startswith=term)
            | Q(article__iexact=term)
            | Q(name__icontains=term)
        )
        if term.isdigit() and len(term) <= 14:
            found |= Q(barcodes__contains=[term])
        return queryset.filter(found), False

    def save_model(self, request, obj, form, change):
        if change:
            obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)
        if change and {"category", "brand"} & set(form.changed_data):
            products_changed([obj.pk])  # the price rules go by them

    # -- the list ---------------------------------------------------------------------

    @admin.display(description=_("own code"), ordering="own_code")
    def short_code(self, obj: Product) -> str:
        return truncated(obj.own_code, width="s")

    @admin.display(description=pgettext_lazy("product", "name"), ordering="name")
    def short_name(self, obj: Product) -> str:
        return truncated(obj.name, width="l")

    @admin.display(description=_("brand"), ordering="brand")
    def short_brand(self, obj: Product) -> str:
        return truncated(obj.brand, width="s")

    @admin.display(description=_("article"), ordering="article")
    def short_article(self, obj: Product) -> str:
        return truncated(obj.article, width="s")

    @admin.display(description=_("category"), ordering="category")
    def short_category(self, obj: Product) -> str:
        return truncated(obj.category, width="m")

    @admin.display(description=pgettext_lazy("product", "active"), boolean=True)
    def is_active(self, obj: Product) -> bool:
        return obj.retired_at is None

    @admin.display(description=_("supplier links"), ordering="links_count")
    def links(self, obj: Product) -> int:
        return getattr(obj, "links_count", 0)

    # -- the page ---------------------------------------------------------------------

    @admin.display(description=_("current offers"))
    def offers(self, obj: Product) -> SafeString | str:
        return _offers_table(selectors.product_offers(obj.pk))

    @admin.display(description=_("proposed links"))
    def proposed(self, obj: Product) -> SafeString | str:
        return _offers_table(selectors.product_offers(obj.pk, states=[State.PROPOSED]))

    @admin.display(description=_("ended offers"))
    def history(self, obj: Product) -> SafeString | str:
        entries = list(selectors.offers_history(obj.pk))
        if not entries:
            return EMPTY
        head = [_("supplier"), _("sku"), _("price"), _("currency"), _("quantity"),
                _("current from"), _("current until")]  # fmt: skip
        rows = [
            (
                entry.config.name,
                entry.sku,
                amount(entry.price, places=2),
                entry.currency or EMPTY,
                amount(entry.quantity),
                when(entry.valid_from),
                when(entry.valid_to),
            )
            for entry in entries
        ]
        return _table(head, rows)


def _offers_table(links) -> SafeString | str:
    links = list(links)
    if not links:
        return EMPTY
    head = [_("supplier"), _("sku"), _("price"), _("currency"), _("quantity"),
            _("list date"), _("how it is linked")]  # fmt: skip
    rows = []
    for link in links:
        listed = link.entry_valid_from is not None
        how = format_html(
            "{} · {} · {}",
            link.get_kind_display(),
            link.get_state_display(),
            f"{link.confidence:.3f}",
        )
        rows.append(
            (
                link.config.name,
                link.supplier_sku,
                amount(link.entry_price, places=2) if listed else gettext("not in the list now"),
                link.entry_currency or EMPTY,
                amount(link.entry_quantity),
                when(link.list_date) if listed else EMPTY,
                how,
            )
        )
    return _table(head, rows)


def _table(head: list, rows: list[tuple]) -> SafeString:
    return format_html(
        '<table class="pf-offers"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
        format_html_join("", "<th>{}</th>", ((h,) for h in head)),
        format_html_join(
            "",
            "<tr>{}</tr>",
            ((format_html_join("", "<td>{}</td>", ((c,) for c in r)),) for r in rows),
        ),
    )
