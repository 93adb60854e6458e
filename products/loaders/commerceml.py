"""CommerceML 2 ``import.xml`` (what 1C and the shops it feeds exchange): the
classifier's groups (Классификатор/Группы, nested) become each product's category
path, the catalogue's products (Каталог/Товары/Товар) our products.

Of a Товар: Ид, Артикул, Наименование, БазоваяЕдиница (its text, else its short or
full name attribute), Штрихкод (also a requisite named "Штрихкод"), Группы/Ид (the
first group), the brand from Изготовитель/Наименование or else from a property of the
classifier named Производитель, Бренд, Торговая марка, Марка or Изготовитель
(ЗначенияСвойств, a reference value resolved through the property's Справочник), and
the requisite "Код" (ЗначенияРеквизитов).

An offers package (``offers.xml``: ПакетПредложений/Предложения/Предложение, as 1C
and pricefeed's own feeds write it) is read the same way: each Предложение is a
product, with the same elements (Ид, Артикул, Наименование, Штрихкод and requisites
named "Штрихкод", БазоваяЕдиница, Изготовитель); it has no classifier, so no category.

Our code is the Товар's **Ид** by default: it is what 1C matches products by in every
exchange, it is never empty and never repeated, where Артикул is often empty or shared
by variants. ``own_code="article"`` takes Артикул, ``own_code="code"`` the requisite
"Код" (1C's own code of the item, "00-00001234").

A catalogue that says it holds changes only (``СодержитТолькоИзменения`` true, as an
attribute or an element of Каталог) retires nothing it does not list; a Товар whose
Статус is "Удален" is retired.
"""

from __future__ import annotations

from typing import BinaryIO

from django.utils.translation import gettext as _

from .limits import CatalogueRefused, LoadLimits
from .rows import Rows, category_path
from .xmlstream import XmlReader

OWN_CODES = ("id", "article", "code")
BRAND_PROPERTIES = {"производитель", "бренд", "торговая марка", "марка", "изготовитель", "brand"}
TEXT_TAGS = frozenset(
    {
        "Ид",
        "Наименование",
        "Артикул",
        "БазоваяЕдиница",
        "Штрихкод",
        "Значение",
        "ИдЗначения",
        "СодержитТолькоИзменения",
    }
)
DELETED = "удален"
# A product's element -> the element that holds them: a catalogue's Товар, an offers
# package's Предложение.
ITEMS = {"Товар": "Товары", "Предложение": "Предложения"}


class _Group:
    __slots__ = ("id", "name", "parent")

    def __init__(self, parent: _Group | None) -> None:
        self.id = ""
        self.name = ""
        self.parent = parent

    def path(self) -> str:
        levels: list[str] = []
        group: _Group | None = self
        while group is not None and len(levels) < 64:
            levels.append(group.name)
            group = group.parent
        return category_path(levels[::-1])


class CommerceMLReader(XmlReader):
    def __init__(self, limits: LoadLimits, rows: Rows, own_code: str) -> None:
        super().__init__(limits)
        if own_code not in OWN_CODES:
            raise ValueError(own_code)
        self.rows = rows
        self.own_code = own_code
        self.groups: dict[str, _Group] = {}
        self.group: _Group | None = None  # the classifier's group being read
        self.brand_properties: set[str] = set()
        self.brand_values: dict[str, str] = {}
        self.property: dict[str, str] | None = None
        self.catalogue = False
        self.offers_package = False
        self.item: dict | None = None
        self.pair: dict[str, str] = {}

    def wants_text(self, path: list[str]) -> bool:
        return path[-1] in TEXT_TAGS

    def started(self, path: list[str], attrib: dict[str, str]) -> None:
        tag = path[-1]
        if tag == "Группа" and "Классификатор" in path:
            self.group = _Group(self.group)
        elif tag == "Свойство" and "Классификатор" in path:
            self.property = {"id": "", "name": "", "value_id": ""}
        elif tag in ("Каталог", "ПакетПредложений"):
            self.catalogue = True
            self.offers_package = self.offers_package or tag == "ПакетПредложений"
            if attrib.get("СодержитТолькоИзменения", "").strip().lower() == "true":
                self.rows.full = False
        elif tag in ITEMS and len(path) >= 2 and path[-2] == ITEMS[tag]:
            status = attrib.get("Статус", "").strip().lower()
            self.item = {
                "line": self.line,
                "deleted": status == DELETED,
                "groups": [],
                "barcodes": [],
                "properties": [],
            }
        elif tag in ("ЗначенияСвойства", "ЗначениеРеквизита", "Справочник"):
            self.pair = {}
        elif tag == "БазоваяЕдиница" and self.item is not None:
            self.item["unit"] = attrib.get("НаименованиеКраткое") or attrib.get(
                "НаименованиеПолное", ""
            )

    def ended(self, path: list[str], text: str) -> None:
        tag = path[-1]
        parent = path[-2] if len(path) > 1 else ""
        item = self.item
        if item is not None:
            self._item_part(item, tag, parent, path, text)
            return
        group = self.group
        if group is not None:
            if parent == "Группа" and tag == "Ид":
                group.id = text
            elif parent == "Группа" and tag == "Наименование":
                group.name = text
            elif tag == "Группа":
                if group.id:
                    self.groups[group.id] = group
                self.group = group.parent
            return
        prop = self.property
        if prop is not None:
            if parent == "Свойство" and tag == "Ид":
                prop["id"] = text
            elif parent == "Свойство" and tag == "Наименование":
                prop["name"] = text
                if text.strip().lower() in BRAND_PROPERTIES and prop["id"]:
                    self.brand_properties.add(prop["id"])
            elif parent == "Справочник" and tag in ("ИдЗначения", "Значение"):
                self.pair[tag] = text
            elif tag == "Справочник":
                if prop["id"] in self.brand_properties and "ИдЗначения" in self.pair:
                    self.brand_values[self.pair["ИдЗначения"]] = self.pair.get("Значение", "")
            elif tag == "Свойство":
                self.property = None
            return
        if (
            tag == "СодержитТолькоИзменения"
            and parent in ("Каталог", "ПакетПредложений")
            and text.lower() == "true"
        ):
            self.rows.full = False

    def _item_part(self, item: dict, tag: str, parent: str, path: list[str], text: str) -> None:
        if tag in ITEMS and parent == ITEMS[tag]:
            self._product(item)
        elif parent in ITEMS:
            if tag == "Штрихкод":
                item["barcodes"].append(text)
            elif tag in ("Ид", "Артикул", "Наименование", "БазоваяЕдиница"):
                item[tag] = text
        elif parent == "Группы" and tag == "Ид" and path[-3] == "Товар":
            item["groups"].append(text)
        elif parent == "Изготовитель" and tag == "Наименование":
            item["maker"] = text
        elif parent in ("ЗначенияСвойства", "ЗначениеРеквизита") and tag in (
            "Ид",
            "Наименование",
            "Значение",
        ):
            self.pair[tag] = text
        elif tag == "ЗначенияСвойства":
            item["properties"].append((self.pair.get("Ид", ""), self.pair.get("Значение", "")))
        elif tag == "ЗначениеРеквизита":
            name = self.pair.get("Наименование", "").strip().lower()
            if name == "код":
                item["code"] = self.pair.get("Значение", "")
            elif name == "штрихкод":
                item["barcodes"].append(self.pair.get("Значение", ""))

    def _product(self, item: dict) -> None:
        self.item = None
        own_code = {"id": "Ид", "article": "Артикул", "code": "code"}[self.own_code]
        code = item.get(own_code, "")
        if item["deleted"]:
            if code:
                self.rows.deleted_codes.append(code)
            return
        if self.rows.count >= self.limits.max_rows:
            raise CatalogueRefused(
                _("more than %(limit)s products") % {"limit": self.limits.max_rows}
            )
        brand = item.get("maker", "")
        if not brand:
            for property_id, value in item["properties"]:
                if property_id in self.brand_properties:
                    brand = self.brand_values.get(value, value)
                    break
        category = ""
        for group_id in item["groups"]:
            group = self.groups.get(group_id)
            if group is not None:
                category = group.path()
                break
        self.rows.add(
            item["line"],
            code,
            item.get("Наименование", ""),
            brand,
            item.get("Артикул", ""),
            [b for b in item["barcodes"] if b],
            item.get("БазоваяЕдиница", "") or item.get("unit", ""),
            category,
        )


def read_commerceml(
    source: BinaryIO, limits: LoadLimits, rows: Rows, *, own_code: str = "id"
) -> Rows:
    rows.format = "commerceml"
    reader = CommerceMLReader(limits, rows, own_code)
    reader.read(source)
    if not reader.catalogue:
        raise CatalogueRefused(
            _(
                "the CommerceML file has neither a catalogue (Каталог) nor an offers "
                "package (ПакетПредложений)"
            )
        )
    if reader.offers_package and not rows.count and not rows.deleted_codes:
        # An empty package is what 1C sends when prices are exchanged separately: as a
        # whole catalogue it would retire every product.
        raise CatalogueRefused(
            _("the offers package (ПакетПредложений) holds no offers (Предложение)")
        )
    return rows
