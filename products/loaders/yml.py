"""Yandex YML (``yml_catalog``, what shops give Yandex Market): the shop's categories
(``shop/categories/category``, each with its ``parentId``) make each offer's category
path; each ``shop/offers/offer`` is one product.

Of an offer: ``id`` (our code), ``name`` or else, for an offer of the vendor.model kind,
``typePrefix vendor model``; ``vendor`` (brand), ``vendorCode`` (article), every
``barcode``, ``categoryId``. YML has no unit: none is set. A YML file is a whole
catalogue (a missing offer is retired).
"""

from __future__ import annotations

from typing import BinaryIO

from django.utils.translation import gettext as _

from .limits import CatalogueRefused, LoadLimits
from .rows import Rows, category_path
from .xmlstream import XmlReader

OFFER_TAGS = frozenset(
    {"name", "typePrefix", "vendor", "model", "vendorCode", "barcode", "categoryId"}
)
MAX_CATEGORY_DEPTH = 64


class YmlReader(XmlReader):
    def __init__(self, limits: LoadLimits, rows: Rows) -> None:
        super().__init__(limits)
        self.rows = rows
        # id -> (name, parent id)
        self.categories: dict[str, tuple[str, str]] = {}
        self.paths: dict[str, str] = {}
        self.category: tuple[str, str] | None = None
        self.offer: dict | None = None
        self.shop = False

    def wants_text(self, path: list[str]) -> bool:
        tag = path[-1]
        if self.offer is not None:
            return tag in OFFER_TAGS and len(path) >= 2 and path[-2] == "offer"
        return tag == "category"

    def started(self, path: list[str], attrib: dict[str, str]) -> None:
        tag = path[-1]
        if tag == "category" and len(path) >= 2 and path[-2] == "categories":
            self.category = (attrib.get("id", "").strip(), attrib.get("parentId", "").strip())
        elif tag == "offer" and len(path) >= 2 and path[-2] == "offers":
            self.offer = {"line": self.line, "id": attrib.get("id", ""), "barcode": []}
        elif tag == "shop":
            self.shop = True

    def ended(self, path: list[str], text: str) -> None:
        tag = path[-1]
        offer = self.offer
        if offer is not None:
            if tag == "offer":
                self.offer = None
                self._product(offer)
            elif tag == "barcode":
                offer["barcode"].append(text)
            elif tag in OFFER_TAGS and path[-2] == "offer":
                offer[tag] = text
            return
        if tag == "category" and self.category is not None:
            category_id, parent_id = self.category
            if category_id:
                self.categories[category_id] = (text, parent_id)
            self.category = None

    def path_of(self, category_id: str) -> str:
        known = self.paths.get(category_id)
        if known is not None:
            return known
        levels: list[str] = []
        seen: set[str] = set()
        current = category_id
        while current and current not in seen and len(levels) < MAX_CATEGORY_DEPTH:
            seen.add(current)
            entry = self.categories.get(current)
            if entry is None:
                break
            levels.append(entry[0])
            current = entry[1]
        path = category_path(levels[::-1])
        self.paths[category_id] = path
        return path

    def _product(self, offer: dict) -> None:
        if self.rows.count >= self.limits.max_rows:
            raise CatalogueRefused(
                _("more than %(limit)s products") % {"limit": self.limits.max_rows}
            )
        name = offer.get("name", "")
        if not name:
            parts = (offer.get(key, "") for key in ("typePrefix", "vendor", "model"))
            name = " ".join(part for part in parts if part)
        self.rows.add(
            offer["line"],
            offer["id"],
            name,
            offer.get("vendor", ""),
            offer.get("vendorCode", ""),
            [b for b in offer["barcode"] if b],
            "",
            self.path_of(offer.get("categoryId", "")),
        )


def read_yml(source: BinaryIO, limits: LoadLimits, rows: Rows) -> Rows:
    rows.format = "yml"
    reader = YmlReader(limits, rows)
    reader.read(source)
    if not reader.shop:
        raise CatalogueRefused(_("the YML file has no shop element"))
    return rows
