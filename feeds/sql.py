"""The feeds' rows written by PostgreSQL: each row's XML (or CSV) text built in SQL and
sent with ``COPY ... TO STDOUT``, so that a million offers stream without a Python
object per row.

XML escaping in SQL (``xml_text``): the characters XML 1.0 forbids (C0 controls but tab,
line feed and carriage return; U+FFFE, U+FFFF) removed; ``& < >`` (and ``"`` in an
attribute value) as entities; tab, line feed, carriage return and the backslash as
character references. What is left has
no character COPY's text format escapes (backslash, the control characters), so each
row comes out of COPY exactly as built, ended by a line feed.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

FORBIDDEN = "".join(chr(c) for c in range(1, 32) if c not in (9, 10, 13)) + "\ufffe\uffff"

# Character references for what COPY's text format would escape (and XML would fold).
_CONTROL_REFERENCES = (("\t", "&#9;"), ("\n", "&#10;"), ("\r", "&#13;"))
# Entities: in content, & and < must be, > is by custom; in an attribute value (always
# written in double quotes) the quote too. The apostrophe never needs one here.
_CONTENT_REFERENCES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\\", "&#92;"))
_ATTRIBUTE_REFERENCES = (*_CONTENT_REFERENCES, ('"', "&quot;"))
_REFERENCES = (*_ATTRIBUTE_REFERENCES, ("'", "&apos;"), *_CONTROL_REFERENCES)


def literal(text: str) -> str:
    """``text`` as a PostgreSQL escape-string literal (E'...'): control characters and
    the backslash written as escapes, the quote doubled."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("''")
        elif code < 32:
            out.append(f"\\x{code:02x}")
        elif code in (0xFFFE, 0xFFFF):
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    return "E'" + "".join(out) + "'"


def _class(chars: str) -> str:
    """A regular-expression bracket of ``chars`` as a SQL literal."""
    return literal("[" + "".join(f"\\u{ord(c):04x}" for c in chars) + "]")


# Control characters are rare: a row is looked at once for them (one regular expression
# over its text fields) and only a row that has any pays for translate()'s scan of the
# forbidden characters (~3 µs a value). The entities are replaced unconditionally:
# replace() of a character that is not there costs less than a regular expression
# asking whether it is (measured: four replace() ~0.06 µs, one `~` ~0.1 µs a value).
_CONTROLS = _class(FORBIDDEN + "".join(char for char, _ in _CONTROL_REFERENCES))


def xml_text(expression: str, *, attribute: bool = False, controls: bool = True) -> str:
    """SQL for ``expression`` (text) escaped for XML content, or for an attribute value
    in double quotes; ``controls=False`` when the value is known to hold no control
    characters (``xml_rows``)."""
    references = _ATTRIBUTE_REFERENCES if attribute else _CONTENT_REFERENCES
    sql = expression
    for char, reference in references:
        # & first: the references written after it are not escaped again.
        sql = f"replace({sql}, {literal(char)}, {literal(reference)})"
    if controls:
        sql = f"translate({sql}, {literal(FORBIDDEN)}, '')"
        for char, reference in _CONTROL_REFERENCES:
            sql = f"replace({sql}, {literal(char)}, {literal(reference)})"
    return sql


Escaper = Callable[..., str]


def xml_rows(build: Callable[[Escaper], str], fields: list[str]) -> str:
    """The row's XML built by ``build`` (given the escaping to apply to each text
    field): with control characters looked for and dropped or referenced only in the
    rows whose ``fields`` hold any."""

    def checked(expression: str, *, attribute: bool = False) -> str:
        return xml_text(expression, attribute=attribute, controls=True)

    def unchecked(expression: str, *, attribute: bool = False) -> str:
        return xml_text(expression, attribute=attribute, controls=False)

    return (
        f"CASE WHEN ({' || '.join(fields)}) ~ {_CONTROLS} THEN {build(checked)} "
        f"ELSE {build(unchecked)} END"
    )


def xml_escape(text: str) -> str:
    """The same escaping in Python (for the feed's head: shop, categories)."""
    text = text.translate({ord(c): None for c in FORBIDDEN})
    for char, reference in _REFERENCES:
        text = text.replace(char, reference)
    return text


def price_sql(percent: str | None) -> str:
    """Our published price, adjusted by ``percent`` (a decimal's text) and rounded to
    kopecks when one is given."""
    if percent is None:
        return "pp.price"
    value = Decimal(percent)  # a decimal's text, never anything else
    return f"round(pp.price * (100 + {literal(str(value))}::numeric) / 100, 2)"


def category_id_sql(expression: str) -> str:
    """A category path's id in a YML feed: a positive integer of at most 17 digits, the
    same for the same path in every run (PostgreSQL's 64-bit text hash, which hash
    partitioning relies on staying the same; MD5 cost ~1.7 µs a row, this ~0.2)."""
    # mod() before abs(): abs() of the smallest bigint would overflow.
    return f"(abs(mod(hashtextextended({expression}, 0), 99999999999999999)) + 1)"


PUBLISHED = """
  FROM products_product p
  JOIN pricing_productprice pp ON pp.product_id = p.id
 WHERE p.retired_at IS NULL AND pp.price IS NOT NULL
"""


def yml_offers(percent: str | None, no_category: str) -> str:
    category = f"CASE WHEN p.category = '' THEN {literal(no_category)} ELSE p.category END"
    row = xml_rows(
        lambda x: _yml_offer(x, percent, category), ["p.own_code", "p.name", "p.brand", "p.article"]
    )
    return f"SELECT {row} {PUBLISHED} ORDER BY p.id"


def _yml_offer(x: Escaper, percent: str | None, category: str) -> str:
    return f"""
 '<offer id="' || {x("p.own_code", attribute=True)} || '" available="'
       || CASE WHEN pp.available THEN 'true' ELSE 'false' END || '"><price>'
       || {price_sql(percent)} || '</price><currencyId>RUR</currencyId><categoryId>'
       || {category_id_sql(category)} || '</categoryId><name>' || {x("p.name")} || '</name>'
       || CASE WHEN p.brand <> '' THEN '<vendor>' || {x("p.brand")} || '</vendor>' ELSE '' END
       || CASE WHEN p.article <> '' THEN '<vendorCode>' || {x("p.article")} || '</vendorCode>'
               ELSE '' END
       || CASE WHEN cardinality(p.barcodes) > 0
               THEN '<barcode>' || array_to_string(p.barcodes, '</barcode><barcode>')
                    || '</barcode>' ELSE '' END
       || '</offer>'
"""


def cml_offers(percent: str | None, price_type_id: str) -> str:
    row = xml_rows(
        lambda x: _cml_offer(x, percent, price_type_id),
        ["p.own_code", "p.name", "p.brand", "p.article", "p.unit"],
    )
    return f"SELECT {row} {PUBLISHED} ORDER BY p.id"


def _cml_offer(x: Escaper, percent: str | None, price_type_id: str) -> str:
    price = price_sql(percent)
    unit = f"CASE WHEN p.unit = '' THEN 'шт' ELSE {x('p.unit')} END"
    return f"""
 '<Предложение><Ид>' || {x("p.own_code")} || '</Ид>'
       || CASE WHEN cardinality(p.barcodes) > 0
               THEN '<Штрихкод>' || p.barcodes[1] || '</Штрихкод>' ELSE '' END
       || CASE WHEN p.article <> '' THEN '<Артикул>' || {x("p.article")} || '</Артикул>'
               ELSE '' END
       || '<Наименование>' || {x("p.name")} || '</Наименование>'
       || '<БазоваяЕдиница>' || {unit} || '</БазоваяЕдиница>'
       || CASE WHEN p.brand <> ''
               THEN '<Изготовитель><Наименование>' || {x("p.brand")}
                    || '</Наименование></Изготовитель>' ELSE '' END
       || CASE WHEN cardinality(p.barcodes) > 1
               THEN '<ЗначенияРеквизитов><ЗначениеРеквизита><Наименование>Штрихкод'
                    || '</Наименование><Значение>'
                    || array_to_string(p.barcodes[2:],
                         '</Значение></ЗначениеРеквизита><ЗначениеРеквизита><Наименование>'
                         || 'Штрихкод</Наименование><Значение>')
                    || '</Значение></ЗначениеРеквизита></ЗначенияРеквизитов>'
               ELSE '' END
       || '<Цены><Цена><Представление>' || {price} || ' RUB за ' || {unit}
       || '</Представление><ИдТипаЦены>' || {literal(price_type_id)}
       || '</ИдТипаЦены><ЦенаЗаЕдиницу>' || {price}
       || '</ЦенаЗаЕдиницу><Валюта>RUB</Валюта><Единица>' || {unit}
       || '</Единица></Цена></Цены><Количество>'
       || CASE WHEN pp.quantity IS NOT NULL THEN trim_scale(pp.quantity)::text
               WHEN pp.available THEN '1' ELSE '0' END
       || '</Количество></Предложение>'
"""


CSV_HEADER = "own_code;name;brand;article;barcode;unit;category;price;available;quantity"


def csv_rows(percent: str | None) -> str:
    """The CSV rows (COPY's CSV format: quoted where needed), in the header's order."""
    return f"""
COPY (
SELECT p.own_code, p.name, p.brand, p.article, array_to_string(p.barcodes, '|'), p.unit,
       p.category, {price_sql(percent)}, CASE WHEN pp.available THEN 1 ELSE 0 END,
       trim_scale(pp.quantity)
{PUBLISHED}
 ORDER BY p.id
) TO STDOUT WITH (FORMAT csv, DELIMITER ';')
"""


def table_rows(percent: str | None) -> str:
    """The rows of the xlsx (read through a server-side cursor)."""
    return f"""
SELECT p.own_code, p.name, p.brand, p.article, array_to_string(p.barcodes, '|'), p.unit,
       p.category, {price_sql(percent)}, pp.available, trim_scale(pp.quantity)
{PUBLISHED}
 ORDER BY p.id
"""


def categories() -> str:
    return f"SELECT DISTINCT p.category {PUBLISHED}"
