"""What an import changes in its config's current catalogue: added, removed, re-priced
and jumped SKUs, and the unreadable rows that keep their value, computed by the
database in one join."""

from __future__ import annotations

from decimal import Decimal

from django.db import connection

from pricefeed import catalogue, sql
from pricefeed.models import PriceImport, PriceListConfig

Status = PriceImport.Status
DIFF_SAMPLE = 50


def diff(decision: catalogue.Acceptance, rows_ok: int) -> dict:
    """Added, removed and re-priced SKUs against the config's current catalogue
    (pricefeed.catalogue), and the re-priced ones that jumped by more than the config's
    ``price_jump_percent``. A SKU of one of the import's unreadable rows that it does
    not list otherwise is not removed: it is counted as unreadable (its previous value
    stays current); with more unreadable rows than were kept, nothing counts as removed.

    Read from catalogue.compare()'s table of differences, which the decision filled
    (catalogue.acceptance), made by the database in one hash join: pulling a million
    rows into Python took ~5 s. Within one file the last row of a repeated SKU counts,
    as in the file. When the current catalogue is exactly a SUCCEEDED snapshot's rows and
    its rows digest is this import's, their SKUs and prices are the same and nothing is
    read: a supplier often sends the same list again. Into an empty catalogue every row
    is added.
    """
    price_import, previous = decision.price_import, decision.previous
    config = price_import.config
    if previous is None or decision.current == 0:
        return {
            "previous_import": previous and previous.pk,
            "added": rows_ok,
            "removed": 0,
            "changed": 0,
        }
    snapshot = config.mode == PriceListConfig.Mode.SNAPSHOT
    counts = {"added": 0, "removed": 0, "changed": 0, "jump": 0, "unreadable": 0}
    samples: dict[str, list] = {kind: [] for kind in counts}
    rows_digest = decision.rows.rows_digest
    price_types: dict[str, dict] = {}
    if not (
        rows_digest is not None
        and snapshot
        and previous.status == Status.SUCCEEDED
        and (previous.parse_info or {}).get("rows_digest") == rows_digest
    ):
        if not decision.compared:  # the same list again, by a digest that differs
            catalogue.compare(
                price_import,
                repeated_skus=decision.rows.repeated_skus,
                unreadable=decision.unreadable,
            )
        with connection.cursor() as cursor:
            cursor.execute(
                sql.DIFF.format(sample=DIFF_SAMPLE), [price_import.config.price_jump_percent]
            )
            for kind, count, sku, old, new_price in cursor.fetchall():
                if sku is None:
                    counts[kind] = count
                else:
                    samples[kind].append((sku, old, new_price))
            price_types = _price_types(cursor, config.price_jump_percent)
    return {
        "previous_import": previous.pk,
        "added": counts["added"],
        "removed": counts["removed"],
        "changed": counts["changed"],
        "jumps": counts["jump"],
        "unreadable": counts["unreadable"],
        "jump_percent": config.price_jump_percent,
        "added_sample": sorted(sku for sku, _, _ in samples["added"]),
        "removed_sample": sorted(sku for sku, _, _ in samples["removed"]),
        "unreadable_sample": sorted(sku for sku, _, _ in samples["unreadable"]),
        "changed_sample": _changes(samples["changed"]),
        "jumps_sample": _changes(samples["jump"]),
        # The prices besides the main one (PriceItem.prices), per price type code:
        # {"changed", "jumps", "went", "changed_sample", "jumps_sample"} ("went": the
        # SKUs still listed that lost their price of the type); only the types with a
        # change.
        "price_types": price_types,
    }


def _price_types(cursor, jump_percent: int) -> dict[str, dict]:
    """The diff of each price type besides the main price (sql.DIFF_PRICE_TYPES)."""
    cursor.execute(sql.DIFF_PRICE_TYPES.format(sample=DIFF_SAMPLE), [jump_percent])
    out: dict[str, dict] = {}
    changed: dict[str, list] = {}
    jumped: dict[str, list] = {}
    for code, sku, old, new, jump, count, jumps, went in cursor.fetchall():
        if sku is None:
            out[code] = {"changed": count, "jumps": jumps, "went": went}
        else:
            changed.setdefault(code, []).append((sku, old, new))
            if jump:
                jumped.setdefault(code, []).append((sku, old, new))
    for code, entry in out.items():
        entry["changed_sample"] = _changes(changed.get(code, [])[:DIFF_SAMPLE])
        entry["jumps_sample"] = _changes(jumped.get(code, [])[:DIFF_SAMPLE])
    return out


def _changes(rows: list) -> list[dict]:
    return [
        {"sku": sku, "old": _plain(_decimal(old)), "new": _plain(_decimal(new))}
        for sku, old, new in sorted(rows)
    ]


def _decimal(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _plain(value: Decimal | None) -> str | None:
    """1234.5000 → "1234.5", 1300 → "1300": how an operator writes a price."""
    return None if value is None else format(value.normalize(), "f")
