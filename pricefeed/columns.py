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
