"""The API's resources: read-only lists and details, each needing the view permission
on its model (permissions.ViewPermission), lists in cursor pages
(pagination.CursorPagination)."""

from __future__ import annotations

from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError

from pricefeed.catalogue import (
    catalogue_changes,
    catalogue_current,
    changes_since_import,
    sku_history,
)
from pricefeed.models import CatalogueEntry, PriceImport, PriceItem, PriceListConfig
from products import selectors
from products.models import Product, SupplierLink

from . import serializers


class ApiView(generics.GenericAPIView):
    model: type[Model]  # whose view permission a request needs
    ordering: str | tuple[str, ...] = "-id"  # the cursor's order (unique)

    def query(self, serializer_class: type[serializers.serializers.Serializer]) -> dict:
        """The request's query parameters, checked by ``serializer_class`` (400 if not)."""
        params = serializer_class(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return dict(params.validated_data)

    # The list's parent (a config, an import), which must exist: 404 if not. Checked
    # only when a page is empty (a page with rows has a parent), which saves a query on
    # every page of a long walk.
    parent: type[Model] | None = None
    parent_kwarg = ""

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        if not page and self.parent is not None:
            parents = self.parent._default_manager.only("pk")
            get_object_or_404(parents, pk=self.kwargs[self.parent_kwarg])
        return page


# -- configs ------------------------------------------------------------------------------


@extend_schema(
    summary=_("Price-list configs"),
    description=_("Which supplier's lists are read from which mailbox (no mailbox credentials)."),
)
class ConfigList(ApiView, generics.ListAPIView):
    """Price-list configs: which supplier's lists are read from which mailbox (no
    mailbox credentials)."""

    model = PriceListConfig
    ordering = "id"
    serializer_class = serializers.ConfigSerializer
    queryset = PriceListConfig.objects.select_related("mailbox")


@extend_schema(summary=_("A price-list config"), description=_("One config by its id."))
class ConfigDetail(ApiView, generics.RetrieveAPIView):
    model = PriceListConfig
    serializer_class = serializers.ConfigSerializer
    queryset = PriceListConfig.objects.select_related("mailbox")


# -- imports ------------------------------------------------------------------------------


@extend_schema(
    summary=_("Imports"),
    description=_("Imports, the latest first; by config, status and creation time."),
    parameters=[serializers.ImportFilter],
)
class ImportList(ApiView, generics.ListAPIView):
    """Imports, the latest first; by config, status and creation time."""

    model = PriceImport
    ordering = "-id"
    serializer_class = serializers.ImportSerializer

    def get_queryset(self) -> QuerySet[PriceImport]:
        params = self.query(serializers.ImportFilter)
        imports = PriceImport.objects.all()
        if "config" in params:
            imports = imports.filter(config_id=params["config"])
        if "status" in params:
            imports = imports.filter(status=params["status"])
        if "created_since" in params:
            imports = imports.filter(created_at__gte=params["created_since"])
        return imports


@extend_schema(summary=_("An import"), description=_("One import by its id."))
class ImportDetail(ApiView, generics.RetrieveAPIView):
    model = PriceImport
    serializer_class = serializers.ImportSerializer
    queryset = PriceImport.objects.all()


@extend_schema(
    summary=_("An import's price rows"),
    description=_("The price rows of an import in the order of its file."),
)
class ImportItems(ApiView, generics.ListAPIView):
    """An import's price rows in file order."""

    model = PriceItem
    ordering = "id"  # the key is (import, row): file order, through the primary key
    serializer_class = serializers.ItemSerializer

    parent, parent_kwarg = PriceImport, "import_id"

    def get_queryset(self) -> QuerySet:
        import_id = self.kwargs["import_id"]
        return serializers.ItemSerializer.rows(PriceItem.objects.of_import(import_id))


# -- a config's catalogue -----------------------------------------------------------------


@extend_schema(
    summary=_("A config's catalogue"),
    description=_("A config's catalogue now (or at the moment as_of), by SKU: one entry per SKU."),
    parameters=[serializers.CatalogueQuery],
)
class Catalogue(ApiView, generics.ListAPIView):
    """A config's catalogue now (or ``as_of`` a moment), by SKU: one entry per SKU."""

    model = CatalogueEntry
    parent, parent_kwarg = PriceListConfig, "config_id"
    ordering = "sku"  # one entry per SKU at any moment: unique
    serializer_class = serializers.EntrySerializer

    def get_queryset(self) -> QuerySet:
        params = self.query(serializers.CatalogueQuery)
        entries = catalogue_current(self.kwargs["config_id"], as_of=params.get("as_of"))
        if "sku" in params:
            entries = entries.filter(sku=params["sku"])
        if "search" in params:
            prefix = params["search"]
            # The lower bound lets the (config, sku) index start at the prefix.
            entries = entries.filter(sku__gte=prefix, sku__startswith=prefix)
        return serializers.EntrySerializer.rows(entries)


@extend_schema(
    summary=_("A SKU's history"),
    description=_("Every value a SKU has had in a config's catalogue, the latest first."),
    parameters=[serializers.HistoryQuery],
)
class SkuHistory(ApiView, generics.ListAPIView):
    """Every value a SKU has had in a config's catalogue, the latest first."""

    model = CatalogueEntry
    parent, parent_kwarg = PriceListConfig, "config_id"
    # A SKU's entries follow one another: no two start at the same moment.
    ordering = ("-valid_from", "-id")
    serializer_class = serializers.EntrySerializer

    def get_queryset(self) -> QuerySet:
        params = self.query(serializers.HistoryQuery)
        entries = sku_history(self.kwargs["config_id"], params["sku"])
        return serializers.EntrySerializer.rows(entries, keep=("valid_from",))


@extend_schema(
    summary=_("Changes of a catalogue"),
    description=_(
        "What changed in a config's catalogue after a moment (since) or after an import "
        "became current (since_import), by SKU: each SKU added or changed since with its "
        "entry now (change: current), each SKU removed since with the entry it had "
        "(change: removed)."
    ),
    parameters=[
        OpenApiParameter(
            "since",
            OpenApiTypes.DATETIME,
            description=_("The moment to compare with (ISO 8601)."),
        ),
        OpenApiParameter(
            "since_import",
            OpenApiTypes.INT,
            description=_("An import of the config: the changes after it became current."),
        ),
    ],
)
class Changes(ApiView, generics.ListAPIView):
    """What changed in a config's catalogue after a moment (``since``) or after an
    import became current (``since_import``), by SKU: each SKU added or changed since
    with its entry now (``change``: "current"), each SKU removed since with the entry it
    had (``change``: "removed")."""

    model = CatalogueEntry
    parent, parent_kwarg = PriceListConfig, "config_id"
    ordering = "sku"  # a SKU is either current now or removed, once
    serializer_class = serializers.ChangeSerializer

    def get_queryset(self) -> QuerySet:
        params = self.query(serializers.ChangesQuery)
        config_id = self.kwargs["config_id"]
        if "since_import" in params:
            price_import = PriceImport.objects.filter(
                pk=params["since_import"], config_id=config_id
            ).first()
            if price_import is None:
                raise ValidationError({"since_import": [_("No such import of this config.")]})
            changes = changes_since_import(price_import)
        else:
            changes = catalogue_changes(config_id, since=params["since"])
        return serializers.ChangeSerializer.rows(changes.current | changes.removed)


# -- our products -------------------------------------------------------------------------


@extend_schema(
    summary=_("Our products"),
    description=_("Our catalogue by own code; by code, brand, active or retired, change time."),
    parameters=[serializers.ProductFilter],
)
class ProductList(ApiView, generics.ListAPIView):
    """Our catalogue by own code; by code, brand, active or retired, change time."""

    model = Product
    ordering = "own_code"  # unique
    serializer_class = serializers.ProductSerializer

    def get_queryset(self) -> QuerySet[Product]:
        params = self.query(serializers.ProductFilter)
        products = Product.objects.all()
        if "own_code" in params:
            products = products.filter(own_code=params["own_code"])
        if "brand" in params:
            products = products.filter(brand__iexact=params["brand"])
        if params.get("active") is not None:
            products = products.filter(retired_at__isnull=params["active"])
        if "updated_since" in params:
            products = products.filter(updated_at__gte=params["updated_since"])
        return products


@extend_schema(summary=_("A product"), description=_("One of our products by its id."))
class ProductDetail(ApiView, generics.RetrieveAPIView):
    model = Product
    serializer_class = serializers.ProductSerializer
    queryset = Product.objects.all()


@extend_schema(
    summary=_("A product's offers"),
    description=_(
        "Every supplier's current offer of one of our products: each link made "
        "automatically or confirmed (and, with proposed=true, each proposed one) with its "
        "config's current catalogue entry of the SKU."
    ),
    parameters=[serializers.OfferQuery],
)
class ProductOffers(ApiView, generics.ListAPIView):
    """Every supplier's current offer of one of our products (products.selectors)."""

    model = SupplierLink
    parent, parent_kwarg = Product, "product_id"
    ordering = "id"
    serializer_class = serializers.OfferSerializer

    def get_queryset(self) -> QuerySet:
        params = self.query(serializers.OfferQuery)
        states = list(selectors.OFFERING)
        if params.get("proposed"):
            states.append(SupplierLink.State.PROPOSED)
        return selectors.product_offers(self.kwargs["product_id"], states=states)


@extend_schema(
    summary=_("A config's unlinked lines"),
    description=_(
        "The lines of a config's current catalogue that are linked to none of our "
        "products (no link, or only a proposed or rejected one), by SKU."
    ),
)
class UnlinkedLines(ApiView, generics.ListAPIView):
    """A config's current lines with no link made automatically or confirmed."""

    model = SupplierLink
    parent, parent_kwarg = PriceListConfig, "config_id"
    ordering = "sku"  # one current entry per SKU
    serializer_class = serializers.UnlinkedLineSerializer

    def get_queryset(self) -> QuerySet:
        return selectors.unlinked_lines(self.kwargs["config_id"])
