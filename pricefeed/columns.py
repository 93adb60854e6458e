"""A config's column mapping (PriceListConfig.columns) as the parser's options.

    {"sku": "Код товара", "price": "Цена опт", "brand": "Бренд",
     "prices": {"rrp": "РРЦ", "retail": {"column": "H", "currency": "USD"}},
     "stocks": {"Москва": "Остаток МСК", "СПб": "K"}}

Field -> header text or column letter (pricefeed.parsing.ALL_FIELDS); ``prices``: a
price type code (PriceType.code) -> its column, or {"column", "currency"}; ``stocks``: a
warehouse -> its column. ``price`` stays the main price (PriceItem.price). Checked by
the config form (forms.PriceListConfigForm.clean_columns)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

PRICES = "prices"
STOCKS = "stocks"


def option_values(mapping: dict[str, Any]) -> dict[str, dict[str, str]]:
    """ParseOptions' columns, prices, price_currencies and stocks from a mapping the
    form accepted (anything else in it is left out)."""
    columns = {k: v for k, v in mapping.items() if isinstance(v, str)}
    prices: dict[str, str] = {}
    currencies: dict[str, str] = {}
    for code, spec in (mapping.get(PRICES) or {}).items():
        if isinstance(spec, str):
            prices[code] = spec
        elif isinstance(spec, dict) and isinstance(spec.get("column"), str):
            prices[code] = spec["column"]
            if isinstance(spec.get("currency"), str) and spec["currency"].strip():
                currencies[code] = spec["currency"].strip().upper()
    stocks = {k: v for k, v in (mapping.get(STOCKS) or {}).items() if isinstance(v, str)}
    return {
        "columns": columns,
        "prices": prices,
        "price_currencies": currencies,
        "stocks": stocks,
    }


# -- the extra values as operators read them (preview, exports, item pages) -------------

EXTRA_LABELS = {
    "article": _("manufacturer's article"),
    "brand": _("brand"),
    "barcodes": _("barcodes"),
    "barcodes_invalid": _("invalid barcodes"),
    "unit": _("unit"),
    "pack": _("pack size"),
    "min_order": _("minimum order"),
    "category": _("category"),
    "stock_text": _("stock as written"),
}
STOCK_KIND_LABELS = {
    "at_least": _("at least"),
    "yes": _("in stock"),
    "no": _("out of stock"),
}


def price_label(code: str, names: dict[str, str] | None = None) -> str:
    """A column of a price type: "цена: РРЦ" (its PriceType name when known)."""
    return gettext("price: %(type)s") % {"type": (names or {}).get(code, code)}


def stock_label(warehouse: str) -> str:
    return gettext("stock: %(warehouse)s") % {"warehouse": warehouse}


def shown(name: str, value: Any) -> str:
    """An extra value as text: barcodes joined with ", "; empty for none."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)


def price_shown(entry: dict | None) -> str:
    """{"price": "15.00", "currency": "USD"} -> "15.00 USD"."""
    if not entry:
        return ""
    return f"{entry.get('price', '')} {entry.get('currency', '')}".strip()


def stock_shown(entry: dict | None) -> str:
    """A warehouse's stock: its figure (">= 50" for a lower bound), else its text."""
    if not entry:
        return ""
    quantity, kind, text = entry.get("quantity"), entry.get("kind", ""), entry.get("text", "")
    if quantity is not None:
        return f"≥ {quantity}" if kind == "at_least" else str(quantity)
    return str(STOCK_KIND_LABELS.get(kind, text or ""))


class ExtraTable:
    """The extra columns a set of lines has, in a fixed order (EXTRA_LABELS', then each
    price type, then each warehouse), with their labels and each line's cells."""

    def __init__(self, extras: list[dict], names: dict[str, str] | None = None) -> None:
        present: set[str] = set()
        codes: dict[str, None] = {}
        warehouses: dict[str, None] = {}
        for extra in extras:
            present.update(k for k, v in extra.items() if v not in (None, "", [], {}))
            codes.update(dict.fromkeys(sorted(extra.get("prices") or {})))
            warehouses.update(dict.fromkeys(extra.get("stocks") or {}))
        self.fields = [f for f in EXTRA_LABELS if f in present]
        self.codes = list(codes)
        self.warehouses = list(warehouses)
        self.names = names or {}

    @property
    def headers(self) -> list[str]:
        return [
            *(str(EXTRA_LABELS[f]) for f in self.fields),
            *(price_label(code, self.names) for code in self.codes),
            *(stock_label(w) for w in self.warehouses),
        ]

    def cells(self, extra: dict) -> list[str]:
        prices = extra.get("prices") or {}
        stocks = extra.get("stocks") or {}
        return [
            *(shown(f, extra.get(f)) for f in self.fields),
            *(price_shown(prices.get(code)) for code in self.codes),
            *(stock_shown(stocks.get(w)) for w in self.warehouses),
        ]
