"""Links out to a file and back: an operator fixes links in Excel.

``links_export`` writes every link, and every unlinked line of a config's current
catalogue (``own_code`` empty), as CSV (UTF-8, ``;``) or, for a path ending ``.xlsx``,
as a workbook, with the header ``config;supplier_sku;own_code;state;kind;confidence``
(``config``: the config's id).

``links_import`` reads the same format back. A row changes a link when it names
another product than the link has, or another state: the link then points at the
product the row's ``own_code`` names, made ``imported``, ``confirmed`` (``rejected``
when the row says so), confirmed by the user given, with a LinkEvent. A row the
same as the link (an exported file read back unchanged) and a row with no own code
change nothing. Every row is checked first: one bad row and nothing is applied; the
reasons, per row, in the reader's language (LinksRefused).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from pricefeed.models import PriceListConfig

from . import linking
from .events import product_links_changed
from .models import LinkEvent, Product, SupplierLink

HEADER = ["config", "supplier_sku", "own_code", "state", "kind", "confidence"]
# A links file bigger than this, or with more rows, is refused.
MAX_FILE_BYTES = 100 * 2**20
MAX_ROWS = 2_000_000
# Rows refused are reported up to this many (all are counted).
MAX_REASONS = 200

_EXPORT = """
SELECT l.config_id, l.supplier_sku, p.own_code, l.state, l.kind, l.confidence
  FROM products_supplierlink l JOIN products_product p ON p.id = l.product_id
UNION ALL
SELECT e.config_id, e.sku, '', '', '', NULL
  FROM pricefeed_priceitem e
 WHERE e.config_id IS NOT NULL AND e.valid_from IS NOT NULL AND e.valid_to IS NULL
   AND NOT EXISTS (SELECT 1 FROM products_supplierlink l
                    WHERE l.config_id = e.config_id AND l.supplier_sku = e.sku)
ORDER BY 1, 2
"""


def _rows() -> Iterator[tuple]:
    with connection.chunked_cursor() as cursor:
        cursor.execute(_EXPORT)
        while chunk := cursor.fetchmany(10_000):
            yield from chunk


def _cells(row: tuple) -> list[str]:
    config_id, sku, own_code, state, kind, confidence = row
    return [
        str(config_id),
        sku,
        own_code,
        state,
        kind,
        "" if confidence is None else str(confidence),
    ]


def links_export(path: Path) -> int:
    """Writes the links file; returns how many rows it has (the header aside)."""
    count = 0
    if path.suffix.lower() == ".xlsx":
        from openpyxl import Workbook

        book = Workbook(write_only=True)
        sheet = book.create_sheet("links")
        sheet.append(HEADER)
        for row in _rows():
            sheet.append(_cells(row))
            count += 1
        book.save(path)
        return count
    with path.open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f, delimiter=";")
        out.writerow(HEADER)
        for row in _rows():
            out.writerow(_cells(row))
            count += 1
    return count


class LinksRefused(Exception):
    """The links file is refused: nothing was applied (``reasons``: why, per row)."""

    def __init__(self, reasons: list[str], refused: int) -> None:
        super().__init__("\n".join(reasons))
        self.reasons = reasons
        self.refused = refused


@dataclass(frozen=True)
class Imported:
    """What a links file changed."""

    rows: int
    changed: int
    unchanged: int


def _read_csv(data: bytes) -> Iterator[list[str]]:
    text = data.decode("utf-8-sig")
    dialect = ";" if text.split("\n", 1)[0].count(";") >= text.split("\n", 1)[0].count(",") else ","
    yield from csv.reader(io.StringIO(text, newline=""), delimiter=dialect)


def _read_xlsx(data: bytes) -> Iterator[list[str]]:
    from python_calamine import CalamineWorkbook

    from pricefeed.parsing.types import Limits
    from pricefeed.parsing.workbook_guard import check_workbook

    check_workbook(data, Limits().for_file(len(data)))
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(data)).get_sheet_by_index(0)
    for row in sheet.iter_rows():
        yield [_cell(v) for v in row[: len(HEADER)]]


def _cell(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def read_rows(path: Path) -> list[list[str]]:
    """The rows of a links file under its header, the header checked."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise LinksRefused(
            [_("the file is larger than %(limit)s MB") % {"limit": MAX_FILE_BYTES // 2**20}], 0
        )
    data = path.read_bytes()
    try:
        rows = _read_xlsx(data) if path.suffix.lower() == ".xlsx" else _read_csv(data)
        header = [c.strip().lower() for c in next(rows, [])]
        if header[: len(HEADER)] != HEADER:
            raise LinksRefused(
                [_("the first row must be the header %(header)s") % {"header": ";".join(HEADER)}], 0
            )
        body: list[list[str]] = []
        for row in rows:
            if len(body) >= MAX_ROWS:
                raise LinksRefused(
                    [_("the file has more than %(limit)s rows") % {"limit": MAX_ROWS}], 0
                )
            if any(c.strip() for c in row):
                body.append([c.strip() for c in row] + [""] * (len(HEADER) - len(row)))
        return body
    except LinksRefused:
        raise
    except Exception as exc:  # a file that cannot be read, whatever the library says
        raise LinksRefused(
            [_("the file cannot be read: %(error)s") % {"error": str(exc)[:200]}], 0
        ) from None


@dataclass(frozen=True)
class _Change:
    config_id: int
    sku: str
    product: Product
    state: str


def _configs(values: set[str]) -> dict[str, int | None]:
    """Each config column value → its config id (None: no such config, or a name more
    than one config has)."""
    ids = {int(v) for v in values if v.isdigit()}
    found = set(PriceListConfig.objects.filter(pk__in=ids).values_list("pk", flat=True))
    names: dict[str, list[int]] = {}
    for pk, name in PriceListConfig.objects.filter(
        name__in=[v for v in values if not v.isdigit()]
    ).values_list("pk", "name"):
        names.setdefault(name, []).append(pk)
    result: dict[str, int | None] = {}
    for value in values:
        if value.isdigit():
            result[value] = int(value) if int(value) in found else None
        else:
            pks = names.get(value, [])
            result[value] = pks[0] if len(pks) == 1 else None
    return result


STATES = {s.value for s in SupplierLink.State}
DECIDED = (SupplierLink.State.CONFIRMED, SupplierLink.State.REJECTED)


def links_import(path: Path, *, user: Any = None) -> Imported:
    """Applies a links file (see the module's docstring); raises LinksRefused, having
    applied nothing, when a row is bad."""
    rows = read_rows(path)
    configs = _configs({row[0] for row in rows})
    codes = {row[2] for row in rows if row[2]}
    products = {p.own_code: p for p in Product.objects.filter(own_code__in=codes)}
    reasons: list[str] = []
    refused = 0
    changes: list[_Change] = []
    seen: set[tuple[int, str]] = set()
    for number, (config, sku, own_code, state, _kind, confidence) in enumerate(rows, start=2):
        why = ""
        config_id = configs.get(config)
        if config_id is None:
            why = _("no config %(config)s") % {"config": config}
        elif not sku:
            why = _("the supplier's SKU is empty")
        elif state and state not in STATES:
            why = _("unknown state %(state)s (one of %(states)s)") % {
                "state": state,
                "states": ", ".join(sorted(STATES)),
            }
        elif confidence and not _decimal(confidence):
            why = _("the confidence %(value)s is not a number from 0 to 1") % {"value": confidence}
        elif own_code and own_code not in products:
            why = _("no product with the own code %(code)s") % {"code": own_code}
        elif own_code and not products[own_code].active and state != SupplierLink.State.REJECTED:
            why = _("product %(code)s is retired") % {"code": own_code}
        elif (config_id, sku) in seen:
            why = _("SKU %(sku)s of config %(config)s is in the file twice") % {
                "sku": sku,
                "config": config,
            }
        if why:
            refused += 1
            if len(reasons) < MAX_REASONS:
                reasons.append(_("row %(row)s: %(reason)s") % {"row": number, "reason": why})
            continue
        assert config_id is not None
        seen.add((config_id, sku))
        if own_code:
            changes.append(_Change(config_id, sku, products[own_code], state))
    if refused:
        raise LinksRefused(reasons, refused)
    changed = _apply(changes, user)
    return Imported(rows=len(rows), changed=changed, unchanged=len(rows) - changed)


def _decimal(text: str) -> bool:
    try:
        value = Decimal(text.replace(",", "."))
    except InvalidOperation:
        return False
    return 0 <= value <= 1


def _apply(changes: list[_Change], user: Any) -> int:
    """Writes the changes in one transaction; returns how many links changed."""
    now = timezone.now()
    changed = 0
    touched: set[int] = set()
    with transaction.atomic():
        # Matchings of these lines end first (or wait for this): see linking.lines_lock.
        linking.lines_lock((change.config_id, change.sku) for change in changes)
        for change in changes:
            wanted = (
                SupplierLink.State.REJECTED
                if change.state == SupplierLink.State.REJECTED
                else SupplierLink.State.CONFIRMED
            )
            link = (
                SupplierLink.objects.select_for_update()
                .filter(config_id=change.config_id, supplier_sku=change.sku)
                .first()
            )
            if link is not None and link.product_id == change.product.pk:
                # The same product: only a person's decision the row adds is a change.
                if change.state not in DECIDED or change.state == link.state:
                    continue
            before = link.product_id if link is not None else None
            if link is None:
                link = SupplierLink(config_id=change.config_id, supplier_sku=change.sku)
            link.product = change.product
            link.kind = SupplierLink.Kind.IMPORTED
            link.state = wanted
            link.confidence = Decimal(1)
            link.confirmed_by = user
            link.confirmed_at = now
            link.updated_at = now
            link.save()
            LinkEvent.objects.create(
                link=link,
                user=user,
                product_before_id=before,
                product_after=change.product,
                state=wanted,
                kind=SupplierLink.Kind.IMPORTED,
                confidence=Decimal(1),
            )
            changed += 1
            touched.update(p for p in (before, change.product.pk) if p is not None)
        product_links_changed(touched)
    return changed
