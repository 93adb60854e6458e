"""Finding the header row and mapping its columns to fields."""

from __future__ import annotations

import re
from dataclasses import dataclass

SCAN_ROWS = 50

SYNONYMS: dict[str, tuple[str, ...]] = {
    # The supplier's own code is the SKU wherever the list has one; the maker's article
    # ("article") is the SKU only when it has none (table._Wanted.read).
    "sku": ("Код товара", "Код поставщика", "Артикул поставщика", "Код 1С", "Код", "SKU",
            "Item code", "Product code", "Supplier code", "Code"),
    "name": ("Наименование", "Название", "Товар", "Номенклатура", "Name", "Description",
             "Product", "Описание"),
    "price": ("Цена", "Стоимость", "Price", "Опт", "Розница", "РРЦ", "МРЦ", "RRP",
              "Wholesale", "Retail"),
    "quantity": ("Остаток", "Кол-во", "Количество", "Наличие", "Qty", "Quantity", "Stock",
                 "Склад"),
    "currency": ("Валюта", "Currency"),
    "article": ("Артикул производителя", "Арт. производителя", "Код производителя",
                "Артикул", "Арт.", "Article", "Part number", "Part No", "MPN", "P/N"),
    "brand": ("Бренд", "Производитель", "Марка", "Торговая марка", "Изготовитель", "Brand",
              "Vendor", "Manufacturer", "Make"),
    "barcode": ("Штрихкод", "Штрих-код", "Штрих код", "Штрихкоды", "EAN", "EAN13", "EAN-13",
                "Barcode", "GTIN", "UPC", "ШК"),
    "unit": ("Ед. изм.", "Единица измерения", "Ед.", "Единица", "Unit", "UOM"),
    "pack": ("Упаковка", "В упаковке", "Кол-во в упаковке", "Кратность", "Фасовка", "Pack",
             "Pack size", "Package"),
    "min_order": ("Мин. партия", "Мин. заказ", "Минимальный заказ", "Минимальная партия",
                  "MOQ", "Min order", "Minimum order"),
}  # fmt: skip
# Synonyms that name their field only sometimes ("Описание" may be a long text beside
# the name, "Опт" a second price, "Наличие" a yes/no): any other synonym of the field
# beats them, whether it matches exactly, by prefix or as words inside the header, so
# "Название товара" is the name beside "Описание". Within one strength, an exact match
# beats a prefix, a prefix beats words inside, and then the synonyms' order decides.
WEAK: dict[str, frozenset[str]] = {
    "sku": frozenset({"Код", "Code"}),
    "name": frozenset({"Товар", "Description", "Product", "Описание"}),
    "price": frozenset({"Опт", "Розница", "РРЦ", "МРЦ", "RRP", "Wholesale", "Retail"}),
    "quantity": frozenset({"Наличие", "Склад"}),
    "article": frozenset({"Арт."}),
    "unit": frozenset({"Единица"}),
}
# A header that names one of these is never that field, whatever else it says:
# "Штрих-код" is a barcode, not the supplier's code; "Код производителя" the maker's
# article; "Кол-во в упаковке" a pack size, not the stock.
EXCLUDE: dict[str, tuple[str, ...]] = {
    "sku": ("штрих", "штрихкод", "ean", "barcode", "gtin", "производ", "изготов",
            "manufactur", "vendor", "brand", "бренд", "оквэд", "окп", "тн"),
    "article": ("поставщ", "supplier"),
    "quantity": ("упак", "кратн", "мин", "pack", "moq", "min", "minimum"),
    "brand": ("страна", "country"),
    "price": ("сумма", "итого"),
}  # fmt: skip

# Price types a price column's header names (a word starting so): an extra price
# column is kept under its type's code when the config maps none (pricefeed keeps
# these codes as PriceType rows).
PRICE_TYPE_STEMS: dict[str, tuple[str, ...]] = {
    "rrp": ("ррц", "мрц", "rrp", "msrp", "рекоменд"),
    "retail": ("розн", "retail"),
    "opt": ("опт", "дилер", "wholesale", "dealer"),
}


def price_type_of(header: str) -> str:
    """The price type code a normalised price header names ("Цена розн." -> "retail"),
    or ""."""
    words = header.split()
    for code, stems in PRICE_TYPE_STEMS.items():
        if any(w.startswith(stem) for w in words for stem in stems):
            return code
    return ""


_NON_WORD = re.compile(r"[\W_]+")


def norm(text: object) -> str:
    """Header text compared case-, space- and punctuation-insensitively ("Кол-во" ==
    "кол во", "Цена, руб." -> "цена руб"); ё reads as е."""
    s = str(text).casefold().replace("ё", "е")
    return _NON_WORD.sub(" ", s).strip()


# field -> (normalised synonym, 1 strong | 0 weak), in SYNONYMS' order.
_NORM_SYNONYMS = {
    f: tuple((norm(s), 0 if s in WEAK.get(f, ()) else 1) for s in syns)
    for f, syns in SYNONYMS.items()
}


def score(header: str, field: str) -> tuple[int, int, int] | None:
    """How well a normalised header names ``field``: (1 strong | 0 weak synonym, 3 exact
    | 2 starts with | 1 contains as whole words, -synonym rank), or None."""
    if not header:
        return None
    words = header.split()
    for bad in EXCLUDE.get(field, ()):
        if any(w.startswith(bad) for w in words):
            return None
    padded = f" {header} "
    best = None
    for rank, (syn, strength) in enumerate(_NORM_SYNONYMS[field]):
        if header == syn:
            level = 3
        elif header.startswith(syn + " "):
            level = 2
        elif f" {syn} " in padded:
            level = 1
        else:
            continue
        score = (strength, level, -rank)
        if best is None or score > best:
            best = score
    return best


def map_by_synonyms(cells: list[str], taken: dict[str, int]) -> dict[str, int]:
    """Field -> column index for the fields not in ``taken``, best matches first, each
    column used once (so "Цена опт" and "Цена розн." give price the first of them)."""
    used = set(taken.values())
    candidates = []
    for field in SYNONYMS:
        if field in taken:
            continue
        for col, cell in enumerate(cells):
            if col in used:
                continue
            found = score(cell, field)
            if found:
                candidates.append((found, -col, field, col))
    candidates.sort(reverse=True)
    out: dict[str, int] = {}
    for _rank, _left, field, col in candidates:
        if field in out or col in used:
            continue
        out[field] = col
        used.add(col)
    return out


@dataclass
class Header:
    row: int  # 0-based index in the scanned rows of the last header line; -1: none
    columns: dict[str, int]  # field -> 0-based column index
    texts: dict[str, str]  # field -> header text as written (or the letter)
    cells: list[str]  # the header cells as written, for messages
    # Fields read by a configured column letter (not by a header text that looks like
    # one: "ID" in the header row is that header, else column ID).
    by_letter: frozenset[str] = frozenset()


def combine(top: list[str], below: list[str]) -> list[str]:
    """Two header lines read as one ("Цены" over "Опт" -> "Цены Опт"); a value repeated
    by a vertical merge is kept once."""
    width = max(len(top), len(below))
    out = []
    for i in range(width):
        a = top[i] if i < len(top) else ""
        b = below[i] if i < len(below) else ""
        if a and b and norm(a) != norm(b):
            out.append(f"{a} {b}")
        else:
            out.append(a or b)
    return out
