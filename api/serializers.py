"""What the API shows of each thing.

Configs and imports are ModelSerializers (a page of them is small). Items and catalogue
entries come in pages of up to 1000 as ``.values()`` rows (``RowSerializer.rows``), and
their serializers write each row by hand: a ModelSerializer's per-field machinery cost
several times the query's time for such a page (docs/api.md, Speed). Their declared
fields are what the schema shows; ``to_representation`` must give exactly those, in the
same forms DRF would (prices as exact decimal strings, times in ISO 8601 with the
offset).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Func, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from pricefeed.models import PriceImport, PriceListConfig
from products.models import Product, SupplierLink


def decimal_text(value: Decimal | str | None) -> str | None:
    """An exact decimal as a string, never in exponent form (as DRF's DecimalField); one
    that PostgreSQL already wrote as text (``RowSerializer.rows``) as it is."""
    if value is None or isinstance(value, str):
        return value
    return f"{value:f}"


def time_text(value: datetime | None) -> str | None:
    """A time in the current time zone in ISO 8601, "Z" for UTC (as DRF's DateTimeField)."""
    if value is None:
        return None
    text = timezone.localtime(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class ConfigSerializer(serializers.ModelSerializer):
    mailbox = serializers.CharField(source="mailbox.name", help_text=_("The mailbox's name."))

    class Meta:
        model = PriceListConfig
        fields = [
            "id",
            "name",
            "mailbox",
            "enabled",
            "mode",
            "sender_pattern",
            "subject_pattern",
            "filename_pattern",
        ]


class ImportSerializer(serializers.ModelSerializer):
    class Meta:
        model = PriceImport
        fields = [
            "id",
            "config",
            "filename",
            "sha256",
            "status",
            "rows_total",
            "rows_ok",
            "rows_failed",
            "rows_skipped",
            "diff",
            "review",
            "review_reason",
            "accepted_at",
            "created_at",
            "finished_at",
        ]


class IsoTime(Func):
    """A time as ISO 8601 text, as PostgreSQL writes it in JSON whatever its DateStyle
    (in the session's zone, UTC: "2026-12-01T10:00:00.123+00:00")."""

    template = "to_json(%(expressions)s) #>> '{}'"
    output_field = TextField()


class RowSerializer(serializers.Serializer):
    """A serializer of the ``.values()`` rows that ``rows`` makes of a queryset (the
    model's ROW_FIELDS, its DECIMALS and TIMES as ``<name>_text``), read-only."""

    ROW_FIELDS: tuple[str, ...] = ()
    DECIMALS: tuple[str, ...] = ("price", "quantity")
    TIMES: tuple[str, ...] = ()

    @classmethod
    def rows(cls, queryset: QuerySet, *, keep: tuple[str, ...] = ()) -> QuerySet:
        """The queryset's rows for ``to_representation``, with the fields ``keep`` as
        they are (the cursor's).

        Decimals and times come as text: decimals as numeric writes them,
        exact ("1234.5000": what DRF's DecimalField writes for 4 places), times in ISO
        8601, converted once per distinct value of a page (``time``). No Decimal
        objects: they are tracked by the garbage collector, and DRF's view, request and
        response form a reference cycle freed only by it, so a page's 2,000 Decimals and
        the 1,000 row dicts holding them were added to every collection until a full
        one (3,000 objects a request, 160 without them), which made the p99 of a page
        of 1,000 three times its p50. Nor a datetime parsed per row by Django's loader
        (a quarter of a page's CPU)."""
        texts: dict[str, Any]
        texts = {f"{name}_text": Cast(name, TextField()) for name in cls.DECIMALS}
        texts |= {f"{name}_text": IsoTime(name) for name in cls.TIMES}
        return queryset.values(*cls.ROW_FIELDS, *keep, **texts)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # A page's rows share few times (an import's entries start at one moment):
        # each is converted once per page (one child serializer serves a page).
        self.times: dict[str | datetime, str | None] = {}

    def time(self, value: str | datetime | None) -> str | None:
        """A time (or PostgreSQL's ISO text of one) as DRF's DateTimeField writes it."""
        if value is None:
            return None
        text = self.times.get(value)
        if text is None:
            moment = datetime.fromisoformat(value) if isinstance(value, str) else value
            text = self.times[value] = time_text(moment)
        return text

    def to_representation(self, instance: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def create(self, validated_data):  # pragma: no cover - the API is read-only
        raise NotImplementedError

    def update(self, instance, validated_data):  # pragma: no cover
        raise NotImplementedError


# A line's values beyond its SKU, name, price, currency and quantity (PriceItem).
EXTRA_FIELDS = (
    "brand",
    "article",
    "barcodes",
    "barcodes_invalid",
    "unit",
    "category",
    "stock_text",
    "stock_kind",
    "prices",
    "stocks",
)
EXTRA_DECIMALS = ("pack", "min_order")


class ExtraFields(serializers.Serializer):
    """The fields of a line beyond SKU, name, price, currency and quantity."""

    brand = serializers.CharField(help_text=_("The maker's brand."))
    article = serializers.CharField(help_text=_("The maker's article (part number)."))
    barcodes = serializers.ListField(
        child=serializers.CharField(),
        help_text=_("Valid barcodes, digits (EAN-8, EAN-13; a UPC-A as its EAN-13; GTIN-14)."),
    )
    barcodes_invalid = serializers.ListField(
        child=serializers.CharField(), help_text=_("Barcodes with a wrong check digit, as written.")
    )
    unit = serializers.CharField()
    pack = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    min_order = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    category = serializers.CharField(help_text=_("The group headings above the line: A / B."))
    stock_text = serializers.CharField(help_text=_("The stock cell when not a plain figure."))
    stock_kind = serializers.ChoiceField(
        choices=["", "at_least", "yes", "no"],
        help_text=_('"at_least": quantity is a lower bound; "yes"/"no": in stock or not.'),
    )
    prices = serializers.DictField(
        help_text=_('Other prices by price type: {"rrp": {"price": "15.00", "currency": "RUB"}}.')
    )
    stocks = serializers.DictField(
        help_text=_('Stock per warehouse: {"Москва": {"quantity": "50", "kind", "text"}}.')
    )

    @staticmethod
    def extras(instance: dict[str, Any]) -> dict[str, Any]:
        out = {name: instance[name] for name in EXTRA_FIELDS}
        out["pack"] = decimal_text(instance["pack_text"])
        out["min_order"] = decimal_text(instance["min_order_text"])
        return out


class ItemSerializer(ExtraFields, RowSerializer):
    """A price row of an import, as the file had it."""

    ROW_FIELDS = ("id", "row_number", "sku", "name", "currency", *EXTRA_FIELDS)
    DECIMALS = ("price", "quantity", *EXTRA_DECIMALS)

    row_number = serializers.IntegerField(help_text=_("The row's number in the file."))
    sku = serializers.CharField()
    name = serializers.CharField()
    price = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    currency = serializers.CharField()
    quantity = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)

    def to_representation(self, instance: dict[str, Any]) -> dict[str, Any]:
        return {
            "row_number": instance["row_number"],
            "sku": instance["sku"],
            "name": instance["name"],
            "price": decimal_text(instance["price_text"]),
            "currency": instance["currency"],
            "quantity": decimal_text(instance["quantity_text"]),
            **self.extras(instance),
        }


class EntrySerializer(ExtraFields, RowSerializer):
    """One value of a SKU in a config's catalogue and when it was current."""

    ROW_FIELDS = (
        "sku",
        "name",
        "currency",
        "price_import_id",
        "row_number",
        "ended_by_id",
        *EXTRA_FIELDS,
    )
    DECIMALS = ("price", "quantity", *EXTRA_DECIMALS)
    TIMES = ("valid_from", "valid_to")

    sku = serializers.CharField()
    name = serializers.CharField()
    price = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    currency = serializers.CharField()
    quantity = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    price_import = serializers.IntegerField(help_text=_("The import that set this value."))
    row_number = serializers.IntegerField(help_text=_("Its row in that import's file."))
    valid_from = serializers.DateTimeField(help_text=_("Current from."))
    valid_to = serializers.DateTimeField(
        allow_null=True, help_text=_("Current until (null: current now).")
    )
    ended_by = serializers.IntegerField(
        allow_null=True, help_text=_("The import that changed or removed it.")
    )

    def to_representation(self, instance: dict[str, Any]) -> dict[str, Any]:
        return {
            "sku": instance["sku"],
            "name": instance["name"],
            "price": decimal_text(instance["price_text"]),
            "currency": instance["currency"],
            "quantity": decimal_text(instance["quantity_text"]),
            "price_import": instance["price_import_id"],
            "row_number": instance["row_number"],
            "valid_from": self.time(instance["valid_from_text"]),
            "valid_to": self.time(instance["valid_to_text"]),
            "ended_by": instance["ended_by_id"],
            **self.extras(instance),
        }


class ChangeSerializer(EntrySerializer):
    """A SKU that changed after a moment: its entry now (``change`` "current": added or
    changed since), or the entry it had then (``change`` "removed": not listed now)."""

    ROW_FIELDS = EntrySerializer.ROW_FIELDS
    CURRENT = "current"
    REMOVED = "removed"

    change = serializers.ChoiceField(choices=[CURRENT, REMOVED])

    def to_representation(self, instance: dict[str, Any]) -> dict[str, Any]:
        row = super().to_representation(instance)
        row["change"] = self.CURRENT if instance["valid_to_text"] is None else self.REMOVED
        return row


# -- our products ------------------------------------------------------------------------


class ProductSerializer(serializers.ModelSerializer):
    active = serializers.BooleanField(help_text=_("Not retired."))

    class Meta:
        model = Product
        fields = [
            "id",
            "own_code",
            "name",
            "brand",
            "article",
            "barcodes",
            "unit",
            "category",
            "active",
            "retired_at",
            "created_at",
            "updated_at",
        ]


class OfferSerializer(serializers.Serializer):
    """A supplier's offer of one of our products: the link (config + supplier SKU) and
    the config's current catalogue entry of that SKU (price and the rest null when the
    current list lacks it)."""

    id = serializers.IntegerField(help_text=_("The link's id."))
    config = serializers.IntegerField(source="config_id", help_text=_("The supplier's config."))
    supplier = serializers.CharField(source="config.name", help_text=_("The config's name."))
    supplier_sku = serializers.CharField()
    kind = serializers.ChoiceField(choices=SupplierLink.Kind.choices)
    state = serializers.ChoiceField(choices=SupplierLink.State.choices)
    confidence = serializers.DecimalField(max_digits=4, decimal_places=3)
    price = serializers.DecimalField(
        source="entry_price", max_digits=18, decimal_places=4, allow_null=True
    )
    currency = serializers.CharField(source="entry_currency", allow_null=True)
    quantity = serializers.DecimalField(
        source="entry_quantity", max_digits=18, decimal_places=4, allow_null=True
    )
    current_from = serializers.DateTimeField(
        source="entry_valid_from", allow_null=True, help_text=_("Current from.")
    )
    list_date = serializers.DateTimeField(
        allow_null=True,
        help_text=_("The list's date: its message's, else when its import became current."),
    )
    price_import = serializers.IntegerField(
        source="entry_price_import_id",
        allow_null=True,
        help_text=_("The import that set this value."),
    )


class UnlinkedLineSerializer(serializers.Serializer):
    """A line of a config's current catalogue that no link makes an offer of."""

    sku = serializers.CharField()
    name = serializers.CharField()
    price = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    currency = serializers.CharField()
    quantity = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    valid_from = serializers.DateTimeField(help_text=_("Current from."))
    price_import = serializers.IntegerField(
        source="price_import_id", help_text=_("The import that set this value.")
    )
    link_state = serializers.ChoiceField(
        choices=[SupplierLink.State.PROPOSED, SupplierLink.State.REJECTED],
        allow_null=True,
        help_text=_("proposed or rejected; null: no link at all."),
    )
    link_product = serializers.CharField(
        allow_null=True, help_text=_("Own code of the proposed or rejected product.")
    )


# -- query parameters ---------------------------------------------------------------------


class ProductFilter(serializers.Serializer):
    own_code = serializers.CharField(
        required=False, max_length=100, help_text=_("Only this own code (exact).")
    )
    brand = serializers.CharField(
        required=False, max_length=255, help_text=_("Only this brand (exact, any case).")
    )
    active = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text=_("true: only active products; false: only retired ones."),
    )
    updated_since = serializers.DateTimeField(
        required=False, help_text=_("Only products changed at or after this time (ISO 8601).")
    )


class OfferQuery(serializers.Serializer):
    proposed = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text=_("true: the proposed links too (not yet confirmed)."),
    )


class ImportFilter(serializers.Serializer):
    config = serializers.IntegerField(
        required=False, min_value=1, help_text=_("Only this config's imports.")
    )
    status = serializers.ChoiceField(
        choices=PriceImport.Status.choices,
        required=False,
        help_text=_("Only imports in this status."),
    )
    created_since = serializers.DateTimeField(
        required=False, help_text=_("Only imports created at or after this time (ISO 8601).")
    )


class CatalogueQuery(serializers.Serializer):
    as_of = serializers.DateTimeField(
        required=False,
        help_text=_("The catalogue as it stood at this time (ISO 8601); default: now."),
    )
    sku = serializers.CharField(
        required=False, max_length=255, help_text=_("Only this SKU (exact).")
    )
    search = serializers.CharField(
        required=False, max_length=255, help_text=_("Only the SKUs that start with this.")
    )


class HistoryQuery(serializers.Serializer):
    sku = serializers.CharField(max_length=255, help_text=_("The SKU."))


class ChangesQuery(serializers.Serializer):
    since = serializers.DateTimeField(required=False)
    since_import = serializers.IntegerField(required=False, min_value=1)

    def validate(self, attrs):
        if ("since" in attrs) == ("since_import" in attrs):
            raise serializers.ValidationError(_("Give either since or since_import."))
        return attrs
