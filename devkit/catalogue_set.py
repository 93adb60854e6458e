"""A matching data set: our catalogue and six supplier lists that name its products the
ways suppliers do, with the ground truth. For the matching tests and bench/matching.py.

From a seed: ``catalogue(n)`` makes n products of ours (fasteners, tools, electrical,
paint) as specs — a noun, qualifiers, a size and the decisive attributes, a brand, an
article, a barcode — rendered as we write them. ``supplier_lines`` renders the products
a supplier carries its own way: look-alike letters in sizes and articles, separators
and leading zeros in articles, abbreviations, ё, words reordered, sizes and volumes
spelled otherwise, barcodes and brands missing. It adds decoys (one of our products
with one decisive attribute changed: a product we do not have), products we do not
carry at all, and barcode conflicts (our product's article and brand with another
product's barcode). Each line carries its truth: the own code it is, or none.

``write_set(directory)`` writes the catalogue as our CSV template
(``own_code;name;brand;article;barcode;unit;category``), the lists as xlsx with the
columns «Код товара», «Наименование», «Бренд», «Артикул», «Штрихкод», «Цена»,
«Остаток», and ``truth.csv`` (``list;sku;own_code;kind``).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

CATALOGUE_HEADER = ["own_code", "name", "brand", "article", "barcode", "unit", "category"]
LIST_HEADER = ["Код товара", "Наименование", "Бренд", "Артикул", "Штрихкод", "Цена", "Остаток"]

# Truth kinds of a supplier line.
MATCH = "match"
DECOY = "decoy"
ABSENT = "absent"
CONFLICT = "conflict"


@dataclass(frozen=True)
class Spec:
    """What a product is, before it is written down."""

    family: str
    noun: str
    qualifiers: tuple[str, ...]
    size: tuple[str, ...]  # numbers as we write them ("4,2", "16")
    thread: bool  # М8х40 rather than 8х40
    measures: tuple[tuple[str, str], ...]  # (kind, value): ("volume", "0,5"), ("pack", "100")
    colour: str
    brand: str
    category: str


@dataclass(frozen=True)
class Product:
    own_code: str
    spec: Spec
    name: str
    article: str
    barcode: str
    unit: str


@dataclass(frozen=True)
class SupplierLine:
    sku: str
    name: str
    brand: str
    article: str
    barcode: str
    price: str
    stock: str
    truth: str  # own code, "" when the line is none of ours
    kind: str


BRANDS = {
    "fasteners": ["Зубр", "Fischer", "Sormat", "Стройкрепеж", "Tech-Krep", "Mungo"],
    "tools": ["Зубр", "Stayer", "Kraft", "Bosch", "Makita", "Gigant", "Dexter"],
    "electrical": ["IEK", "Navigator", "ЭРА", "Rexant", "КВТ", "Schneider"],
    "paint": ["Текс", "Лакра", "Tikkurila", "Dufa", "Ярославские краски", "Eskaro"],
}
COLOURS = ["белый", "черный", "серый", "красный", "синий", "зеленый", "желтый", "коричневый"]
PAINT_COLOURS = [*COLOURS, "бежевый", "голубой", "оранжевый"]


def _families(rng: random.Random) -> Iterator[Spec]:
    """An endless stream of product specs of every family."""
    while True:
        family = rng.choice(["fasteners", "fasteners", "tools", "electrical", "paint"])
        brand = rng.choice(BRANDS[family])
        if family == "fasteners":
            kind = rng.randrange(5)
            d = rng.choice(["4", "5", "6", "8", "10", "12", "16"])
            length = rng.choice(["16", "20", "25", "30", "35", "40", "50", "60", "70", "80", "100"])
            pack = rng.choice(["10", "25", "50", "100", "200"])
            finish = rng.choice(["оцинкованный", "нержавеющий", "черный оксид"])
            if kind == 0:
                yield Spec(
                    family,
                    "Болт",
                    ("DIN 933", "8.8", finish),
                    (d, length),
                    True,
                    (("pack", pack),),
                    "",
                    brand,
                    "Крепёж/Болты",
                )
            elif kind == 1:
                yield Spec(
                    family,
                    "Винт",
                    ("DIN 7985", "с полукруглой головкой", finish),
                    (d, length),
                    True,
                    (("pack", pack),),
                    "",
                    brand,
                    "Крепёж/Винты",
                )
            elif kind == 2:
                ds = rng.choice(["3,5", "3,8", "4,2", "4,8", "5,5"])
                yield Spec(
                    family,
                    "Саморез",
                    (
                        "по металлу",
                        rng.choice(["со сверлом", "острый"]),
                        rng.choice(["оцинкованный", "фосфатированный"]),
                    ),
                    (ds, length),
                    False,
                    (("pack", pack),),
                    "",
                    brand,
                    "Крепёж/Саморезы",
                )
            elif kind == 3:
                yield Spec(
                    family,
                    "Дюбель",
                    (
                        rng.choice(["распорный", "универсальный"]),
                        rng.choice(["нейлоновый", "полипропиленовый"]),
                    ),
                    (rng.choice(["5", "6", "8", "10"]), length),
                    False,
                    (("pack", pack),),
                    "",
                    brand,
                    "Крепёж/Дюбели",
                )
            else:
                yield Spec(
                    family,
                    "Анкер",
                    (rng.choice(["клиновой", "забивной", "с гайкой"]), finish),
                    (d, length),
                    False,
                    (("pack", rng.choice(["10", "25", "50"])),),
                    "",
                    brand,
                    "Крепёж/Анкеры",
                )
        elif family == "tools":
            kind = rng.randrange(4)
            if kind == 0:
                d = rng.choice(["2", "2,5", "3", "3,5", "4", "5", "6", "8", "10", "12"])
                yield Spec(
                    family,
                    "Сверло",
                    (
                        "по металлу",
                        rng.choice(["HSS", "HSS-Co", "HSS-G"]),
                        rng.choice(["ц/х", "шлифованное"]),
                    ),
                    (),
                    False,
                    (("length", d),),
                    "",
                    brand,
                    "Инструмент/Сверла",
                )
            elif kind == 1:
                yield Spec(
                    family,
                    "Бита",
                    (
                        rng.choice(["PH1", "PH2", "PH3", "PZ2", "T25"]),
                        rng.choice(["магнитная", "торсионная"]),
                    ),
                    (),
                    False,
                    (
                        ("length", rng.choice(["25", "50", "70", "90"])),
                        ("pack", rng.choice(["1", "2", "5", "10"])),
                    ),
                    "",
                    brand,
                    "Инструмент/Биты",
                )
            elif kind == 2:
                a = rng.choice(["8", "10", "12", "13", "14", "17", "19", "22"])
                b = str(int(a) + rng.choice([1, 2, 3]))
                yield Spec(
                    family,
                    "Ключ",
                    ("рожковый", rng.choice(["CrV", "хромированный"])),
                    (a, b),
                    False,
                    (),
                    "",
                    brand,
                    "Инструмент/Ключи",
                )
            else:
                yield Spec(
                    family,
                    "Молоток",
                    (
                        rng.choice(["слесарный", "столярный"]),
                        rng.choice(["с фиберглассовой ручкой", "с деревянной ручкой"]),
                    ),
                    (),
                    False,
                    (("weight", rng.choice(["200", "300", "500", "800", "1000"])),),
                    "",
                    brand,
                    "Инструмент/Молотки",
                )
        elif family == "electrical":
            kind = rng.randrange(4)
            if kind == 0:
                yield Spec(
                    family,
                    "Кабель",
                    (rng.choice(["ВВГнг(А)-LS", "ВВГ-Пнг(А)", "NYM"]), "медный"),
                    (rng.choice(["2", "3", "4", "5"]), rng.choice(["1,5", "2,5", "4", "6"])),
                    False,
                    (("length", rng.choice(["50", "100", "200"]) + " м"),),
                    "",
                    brand,
                    "Электрика/Кабель",
                )
            elif kind == 1:
                yield Spec(
                    family,
                    "Выключатель",
                    (
                        "автоматический",
                        rng.choice(["ВА47-29", "ВА47-63"]),
                        rng.choice(["1P", "2P", "3P"]),
                        rng.choice(["C", "B"]),
                    ),
                    (),
                    False,
                    (("current", rng.choice(["6", "10", "16", "20", "25", "32", "40"])),),
                    "",
                    brand,
                    "Электрика/Автоматы",
                )
            elif kind == 2:
                yield Spec(
                    family,
                    "Лампа",
                    (
                        "светодиодная",
                        rng.choice(["A60", "C37", "G45"]),
                        rng.choice(["E27", "E14"]),
                        rng.choice(["4000K", "3000K", "6500K"]),
                    ),
                    (),
                    False,
                    (("power", rng.choice(["5", "7", "9", "11", "13", "15"])),),
                    "",
                    brand,
                    "Электрика/Лампы",
                )
            else:
                yield Spec(
                    family,
                    "Изолента",
                    ("ПВХ", rng.choice(["15", "19"]) + " мм"),
                    (),
                    False,
                    (("length", rng.choice(["10", "20", "25"]) + " м"),),
                    rng.choice(COLOURS),
                    brand,
                    "Электрика/Изоляция",
                )
        else:
            kind = rng.randrange(3)
            volume = rng.choice(["0,4", "0,8", "0,9", "1", "1,9", "2,5", "2,7", "5", "9", "10"])
            if kind == 0:
                yield Spec(
                    family,
                    "Эмаль",
                    (
                        rng.choice(["ПФ-115", "ПФ-266", "НЦ-132", "алкидная"]),
                        rng.choice(["глянцевая", "матовая"]),
                    ),
                    (),
                    False,
                    (("weight_kg", volume),),
                    rng.choice(PAINT_COLOURS),
                    brand,
                    "Лакокраска/Эмали",
                )
            elif kind == 1:
                yield Spec(
                    family,
                    "Краска",
                    (
                        "водно-дисперсионная",
                        rng.choice(["интерьерная", "фасадная"]),
                        rng.choice(["моющаяся", "матовая"]),
                    ),
                    (),
                    False,
                    (("volume", volume),),
                    rng.choice(["белый", "бежевый", "серый"]),
                    brand,
                    "Лакокраска/Краски",
                )
            else:
                yield Spec(
                    family,
                    "Грунтовка",
                    (rng.choice(["ГФ-021", "акриловая", "глубокого проникновения"]),),
                    (),
                    False,
                    (("volume", volume),),
                    rng.choice(["серый", "красный", "белый", ""]),
                    brand,
                    "Лакокраска/Грунтовки",
                )


# -- how a spec is written ------------------------------------------------------------------------

ABBREVIATED = {
    "оцинкованный": "оцинк.",
    "нержавеющий": "нерж.",
    "по металлу": "д/мет.",
    "автоматический": "автомат.",
    "универсальный": "унив.",
    "белый": "бел.",
    "черный": "черн.",
    "красный": "красн.",
    "с полукруглой головкой": "п/кр гол.",
}
LOOKALIKE = str.maketrans("AaBEeKkMHOoPpCcTXxy", "АаВЕеКкМНОоРрСсТХху")

_FEMININE = {"Эмаль", "Краска", "Грунтовка", "Лампа", "Изолента", "Бита"}


def _colour(word: str, noun: str) -> str:
    if not word:
        return ""
    if noun in _FEMININE and word.endswith("ый"):
        return word[:-2] + "ая"
    if noun in _FEMININE and word.endswith("ий"):
        return word[:-2] + "яя"
    return word


def _measure(kind: str, value: str, style: int, rng: random.Random) -> str:
    if kind == "pack":
        return (
            rng.choice([f"({value} шт)", f"уп.{value}шт", f"{value} шт."])
            if style
            else f"({value} шт)"
        )
    if kind == "volume":
        if style and rng.random() < 0.5 and float(value.replace(",", ".")) < 1:
            return f"{int(float(value.replace(',', '.')) * 1000)} мл"
        return f"{value}л" if style and rng.random() < 0.5 else f"{value} л"
    if kind == "weight_kg":
        if style and rng.random() < 0.5 and float(value.replace(",", ".")) < 1:
            return f"{int(float(value.replace(',', '.')) * 1000)} г"
        return f"{value}кг" if style else f"{value} кг"
    if kind == "weight":
        return f"{value}г" if style and rng.random() < 0.5 else f"{value} г"
    if kind == "length":
        if value.endswith(" м"):
            return value.replace(" ", "") if style and rng.random() < 0.5 else value
        return f"{value}мм" if style and rng.random() < 0.5 else f"{value} мм"
    if kind == "power":
        return f"{value}Вт" if style and rng.random() < 0.5 else f"{value} Вт"
    if kind == "current":
        return f"{value}А" if style and rng.random() < 0.5 else f"{value} А"
    return value


def _size(spec: Spec, style: int, rng: random.Random) -> str:
    if not spec.size:
        return ""
    numbers = list(spec.size)
    if style and rng.random() < 0.4:
        numbers = [n.replace(",", ".") for n in numbers]
    sep = rng.choice(["х", "x", "*", " x ", "Х"]) if style else "х"
    thread = ""
    if spec.thread:
        thread = rng.choice(["М", "M", "м"]) if style else "М"
    return thread + sep.join(numbers)


def render(spec: Spec, style: int = 0, rng: random.Random | None = None) -> str:
    """The name of a spec: as we write it (style 0), or as a supplier does (a style
    1..6 and a random source for the variations)."""
    rng = rng or random.Random(0)
    qualifiers = list(spec.qualifiers)
    colour = _colour(spec.colour, spec.noun)
    if style:
        if rng.random() < 0.5:
            qualifiers = [ABBREVIATED.get(q, q) for q in qualifiers]
        if style in (3, 5, 6) and rng.random() < 0.6:
            rng.shuffle(qualifiers)
        if colour and rng.random() < 0.4:
            colour = ABBREVIATED.get(spec.colour, colour)
    size = _size(spec, style, rng)
    measures = [_measure(k, v, style, rng) for k, v in spec.measures]
    parts = [
        spec.noun,
        *([size] if size else []),
        *qualifiers,
        *([colour] if colour else []),
        *measures,
    ]
    if style in (3, 6) and rng.random() < 0.5:
        head, rest = parts[0], parts[1:]
        rng.shuffle(rest)
        parts = [head, *rest]
    if style and rng.random() < 0.3:
        parts.append(spec.brand)
    text = " ".join(parts)
    if style and rng.random() < 0.3:
        text = text.replace("е", "ё", 1) if "ё" not in text else text.replace("ё", "е")
    if style in (2, 6) and rng.random() < 0.5:
        text = text.translate(LOOKALIKE)
    if style and rng.random() < 0.2:
        text = text.upper()
    return text


def ean13(rng: random.Random, prefix: str = "46") -> str:
    body = prefix + "".join(rng.choice("0123456789") for _ in range(12 - len(prefix)))
    total = sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(body))
    return body + str((10 - total % 10) % 10)


def _article(rng: random.Random) -> str:
    letters = "ABCDEHKMPTX"
    head = "".join(rng.choice(letters) for _ in range(rng.choice([0, 2, 3])))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([5, 6, 7])))
    if head:
        return f"{head}-{digits[:3]}-{digits[3:]}"
    return f"{digits[:2]}{rng.choice(['-', '.', ''])}{digits[2:]}"


def _article_variant(article: str, rng: random.Random) -> str:
    variant = article
    if rng.random() < 0.5:
        variant = variant.replace("-", rng.choice(["", " ", ".", "/"]))
    if rng.random() < 0.3:
        variant = variant.translate(LOOKALIKE)
    if rng.random() < 0.2:
        variant = "00" + variant
    if rng.random() < 0.2:
        variant = variant.lower()
    return variant


def _unique_specs(
    rng: random.Random, n: int, seen: set[str], *, names: set[str] | None = None
) -> list[Spec]:
    """n specs whose name and brand are not in ``seen`` (nor their names in ``names``)."""
    specs: list[Spec] = []
    for spec in _families(rng):
        name = render(spec)
        key = name + "|" + spec.brand
        if key in seen or (names is not None and name in names):
            continue
        seen.add(key)
        specs.append(spec)
        if len(specs) == n:
            return specs
    raise AssertionError("unreachable")


def catalogue(n: int = 5000, *, seed: int = 31) -> list[Product]:
    """Our catalogue: n products with unique names (within a brand), articles and
    barcodes."""
    rng = random.Random(seed)
    products = []
    articles: set[str] = set()
    barcodes: set[str] = set()
    for i, spec in enumerate(_unique_specs(rng, n, set()), start=1):
        article = _article(rng)
        while article in articles:
            article = _article(rng)
        articles.add(article)
        barcode = ean13(rng)
        while barcode in barcodes:
            barcode = ean13(rng)
        barcodes.add(barcode)
        unit = "уп" if any(k == "pack" for k, _ in spec.measures) else "шт"
        products.append(Product(f"OWN-{i:06d}", spec, render(spec), article, barcode, unit))
    return products


def _decoy(spec: Spec, rng: random.Random) -> Spec:
    """The spec with one decisive attribute changed."""
    choices = []
    if spec.size:
        choices.append("size")
    if spec.measures:
        choices.append("measure")
    if spec.colour:
        choices.append("colour")
    what = rng.choice(choices)
    if what == "size":
        numbers = list(spec.size)
        numbers[-1] = str(int(float(numbers[-1].replace(",", "."))) + rng.choice([1, 3, 5, 7]))
        return replace(spec, size=tuple(numbers))
    if what == "colour":
        other = rng.choice([c for c in PAINT_COLOURS if c != spec.colour])
        return replace(spec, colour=other)
    measures = list(spec.measures)
    i = rng.randrange(len(measures))
    kind, value = measures[i]
    unit = " м" if value.endswith(" м") else ""
    number = value.removesuffix(" м").replace(",", ".")
    changed = str(round(float(number) * rng.choice([2, 3, 4]), 1)).removesuffix(".0")
    measures[i] = (kind, changed.replace(".", ",") + unit)
    return replace(spec, measures=tuple(measures))


def supplier_lines(
    products: list[Product],
    style: int,
    *,
    seed: int = 31,
    share: float = 0.5,
    decoys: float = 0.05,
    absent: float = 0.08,
    conflicts: float = 0.01,
) -> list[SupplierLine]:
    """A supplier's list in ``style`` (1..6): ``share`` of our products, plus decoys,
    products we do not carry and barcode conflicts (shares of the lines carried)."""
    rng = random.Random(seed * 1000 + style)
    carried = rng.sample(products, int(len(products) * share))
    ours = {render(p.spec) + "|" + p.spec.brand for p in products}
    # What we do not carry is named unlike anything we do, whatever the brand.
    our_names = {render(p.spec) for p in products}
    barcode_share = {1: 0.9, 2: 0.0, 3: 0.4, 4: 0.6, 5: 0.0, 6: 0.3}[style]
    brand_share = {1: 1.0, 2: 0.9, 3: 0.5, 4: 0.9, 5: 0.7, 6: 0.6}[style]
    article_share = {1: 0.9, 2: 0.9, 3: 0.7, 4: 0.6, 5: 0.0, 6: 0.4}[style]
    lines: list[SupplierLine] = []

    def line(spec: Spec, article: str, barcode: str, truth: str, kind: str) -> SupplierLine:
        sku = f"S{style}-{len(lines) + 1:06d}"
        has_article = article and rng.random() < article_share
        return SupplierLine(
            sku=sku,
            name=render(spec, style, rng),
            brand=spec.brand if rng.random() < brand_share else "",
            article=_article_variant(article, rng) if has_article else "",
            barcode=barcode if barcode and rng.random() < barcode_share else "",
            price=f"{rng.uniform(1, 5000):.2f}".replace(".", ","),
            stock=rng.choice(["10", ">50", "есть", "5", "120"]),
            truth=truth,
            kind=kind,
        )

    for product in carried:
        lines.append(line(product.spec, product.article, product.barcode, product.own_code, MATCH))
    for product in rng.sample(carried, int(len(carried) * decoys)):
        spec = _decoy(product.spec, rng)
        if render(spec) in our_names:
            continue
        lines.append(line(spec, _article(rng), ean13(rng, "47"), "", DECOY))
    for spec in _unique_specs(rng, int(len(carried) * absent), set(ours), names=our_names):
        lines.append(line(spec, _article(rng), ean13(rng, "48"), "", ABSENT))
    for product in rng.sample(carried, int(len(carried) * conflicts)):
        other = rng.choice(products)
        if other is product:
            continue
        sku = f"S{style}-{len(lines) + 1:06d}"
        lines.append(
            SupplierLine(
                sku,
                render(product.spec, style, rng),
                product.spec.brand,
                product.article,
                other.barcode,
                "100,00",
                "1",
                product.own_code,
                CONFLICT,
            )
        )
    rng.shuffle(lines)
    return lines


def data_set(
    n: int = 5000, *, seed: int = 31
) -> tuple[list[Product], dict[str, list[SupplierLine]]]:
    products = catalogue(n, seed=seed)
    lists = {
        f"supplier{style}": supplier_lines(products, style, seed=seed) for style in range(1, 7)
    }
    return products, lists


def write_catalogue(products: list[Product], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f, delimiter=";")
        out.writerow(CATALOGUE_HEADER)
        for p in products:
            out.writerow(
                [p.own_code, p.name, p.spec.brand, p.article, p.barcode, p.unit, p.spec.category]
            )


def write_list(lines: list[SupplierLine], path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Прайс")
    sheet.append(LIST_HEADER)
    for x in lines:
        sheet.append([x.sku, x.name, x.brand, x.article, x.barcode, x.price, x.stock])
    book.save(path)


def write_set(directory: Path, n: int = 5000, *, seed: int = 31) -> None:
    """The catalogue (``catalogue.csv``), the six lists (``supplierN.xlsx``) and the
    truth (``truth.csv``) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    products, lists = data_set(n, seed=seed)
    write_catalogue(products, directory / "catalogue.csv")
    with (directory / "truth.csv").open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f, delimiter=";")
        out.writerow(["list", "sku", "own_code", "kind"])
        for name, lines in lists.items():
            write_list(lines, directory / f"{name}.xlsx")
            for x in lines:
                out.writerow([name, x.sku, x.truth, x.kind])
