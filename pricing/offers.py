"""Offers and our prices, kept up to date for a set of products in one transaction.

For the products in scope: every linked line of every supplier (links ``auto`` or
``confirmed``, the config's current catalogue entry) becomes an offer per price type,
converted to roubles at the list's date (the config's newest accepted list's: its
catalogue is as of it) in PostgreSQL (one statement); the best offer
and our price are chosen in Python by the rules (pricing.rules); what changed is written
back with one statement per table, and announced in the same transaction as
``offer.changed`` and ``price.changed`` outbox events (each carrying up to
EVENT_ITEMS products). A price that moves more than its rule allows is held for
approval (``price_approve``).

One refresh runs at a time (an advisory lock): refreshes of the same products never
interleave, and each sees the last one's result.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from outbox.services import publish
from pricefeed.parsing.table import gc_paused
from products.events import LINKS_CHANGED, config_links_changed

from . import rules
from .models import OfferRule, PriceRule, ProductPrice, PublishedVersion, SupplierTerms

logger = logging.getLogger(__name__)

OFFER_CHANGED = "offer.changed"
PRICE_CHANGED = "price.changed"
REFRESH = "pricing.refresh"
REFRESH_PART = "pricing.refresh_part"
EVENT_ITEMS = 500  # products per event
ALL_CHUNK = 10_000  # products per transaction in a refresh of everything
OFFERING = ("auto", "confirmed")
# A list's days of currency for a supplier without terms: the terms' default.
STALE_DAYS = SupplierTerms._meta.get_field("stale_days").default
# Plain strings: psycopg would write an enum member by its name.
PUBLISHED = ProductPrice.Status.PUBLISHED.value
HELD = ProductPrice.Status.HELD.value
NO_OFFER = ProductPrice.Status.NO_OFFER.value
NO_RULE = ProductPrice.Status.NO_RULE.value

# The offers of the products in o_scope, one per (product, config, price type): a
# config's main price (price type "") and each of its other prices, in roubles at the
# rate in effect on the list's date (Moscow) plus the supplier's surcharge. Two SKUs of
# one supplier linked to one product give one offer: the one that counts, in stock,
# cheapest.
FRESH_SQL = """
CREATE TEMP TABLE o_fresh ON COMMIT DROP AS
WITH links AS (
    SELECT l.product_id, l.config_id, l.supplier_sku
      FROM o_scope s
      JOIN products_supplierlink l
        ON l.product_id = s.product_id AND l.state IN ('auto', 'confirmed')
       AND (%(config)s::bigint IS NULL OR l.config_id = %(config)s::bigint)
), lists AS (
    -- Each config's list date: its newest accepted list's (the catalogue is as of it).
    SELECT c.config_id, x.list_date
      FROM (SELECT DISTINCT config_id FROM links) c
     CROSS JOIN LATERAL (
         SELECT COALESCE(m.sent_at, i.accepted_at) AS list_date
           FROM pricefeed_priceimport i
           JOIN mailboxes_inboundmessage m ON m.id = i.message_id
          WHERE i.config_id = c.config_id AND i.accepted_at IS NOT NULL
          ORDER BY i.accepted_at DESC, i.id DESC LIMIT 1
     ) x
), entries AS (
    SELECT l.product_id, l.config_id, l.supplier_sku AS sku, e.id AS entry_id,
           e.price, upper(btrim(e.currency)) AS currency, e.quantity, e.stock_kind, e.prices,
           CASE WHEN e.id IS NOT NULL THEN d.list_date END AS list_date,
           COALESCE(t.enabled, true) AS enabled, COALESCE(t.priority, 100) AS priority,
           COALESCE(t.stale_days, %(stale_days)s) AS stale_days,
           COALESCE(t.rate_surcharge, 0) AS surcharge
      FROM links l
      LEFT JOIN pricefeed_priceitem e
             ON e.config_id = l.config_id AND e.sku = l.supplier_sku
            AND e.valid_to IS NULL AND e.valid_from IS NOT NULL
      LEFT JOIN lists d ON d.config_id = l.config_id
      LEFT JOIN pricing_supplierterms t ON t.config_id = l.config_id
), typed AS (
    SELECT product_id, config_id, sku, entry_id, ''::text AS price_type, price, currency,
           quantity, stock_kind, list_date, enabled, priority, stale_days, surcharge
      FROM entries
    UNION ALL
    SELECT e.product_id, e.config_id, e.sku, e.entry_id, p.key,
           CASE WHEN p.value->>'price' ~ '^-?[0-9]{1,14}(\\.[0-9]+)?$'
                THEN (p.value->>'price')::numeric END,
           upper(btrim(COALESCE(NULLIF(p.value->>'currency', ''), e.currency))),
           e.quantity, e.stock_kind, e.list_date, e.enabled, e.priority, e.stale_days,
           e.surcharge
      FROM entries e CROSS JOIN LATERAL jsonb_each(e.prices) p
     WHERE jsonb_typeof(e.prices) = 'object' AND length(p.key) <= 32
), dated AS (
    SELECT typed.*, CASE WHEN currency IN ('', 'RUB', 'RUR') THEN 'RUB' ELSE currency END AS code,
           (list_date AT TIME ZONE 'Europe/Moscow')::date AS day
      FROM typed
), needed AS (
    SELECT DISTINCT code, day FROM dated WHERE code <> 'RUB' AND day IS NOT NULL
), rates AS (
    SELECT n.code, n.day, r.rate, r.date
      FROM needed n
      LEFT JOIN LATERAL (
          SELECT rate, date FROM pricing_rate
           WHERE currency = n.code AND date <= n.day AND date > n.day - %(window)s
           ORDER BY date DESC, (source = 'manual') DESC LIMIT 1
      ) r ON true
), offers AS (
    SELECT d.product_id, d.config_id, d.price_type, d.sku, d.price,
           CASE WHEN d.currency = '' THEN 'RUB' ELSE d.currency END AS currency,
           CASE WHEN d.code = 'RUB' THEN d.price
                ELSE round(d.price * r.rate * (1 + d.surcharge / 100), 4) END AS price_rub,
           round(r.rate * (1 + d.surcharge / 100), 8) AS rate, r.date AS rate_date,
           d.quantity,
           CASE d.stock_kind WHEN 'no' THEN false WHEN 'yes' THEN true
                WHEN 'at_least' THEN true ELSE (d.quantity IS NULL OR d.quantity > 0) END
               AS in_stock,
           d.list_date, d.entry_id,
           CASE WHEN d.price IS NULL THEN 'no_price'
                WHEN NOT d.enabled THEN 'disabled'
                WHEN d.list_date < now() - d.stale_days * interval '1 day' THEN 'stale'
                WHEN d.code <> 'RUB' AND r.rate IS NULL THEN 'no_rate'
                ELSE 'ok' END AS status,
           d.priority
      FROM dated d LEFT JOIN rates r ON r.code = d.code AND r.day = d.day
)
SELECT DISTINCT ON (product_id, config_id, price_type) *
  FROM offers
 ORDER BY product_id, config_id, price_type, status <> 'ok', in_stock DESC,
          price_rub NULLS LAST, sku
"""

OFFER_COLUMNS = (
    "sku", "price", "currency", "price_rub", "rate", "rate_date", "quantity", "in_stock",
    "list_date", "entry_id", "status",
)  # fmt: skip


def _columns(prefix: str, columns: tuple[str, ...]) -> str:
    return ", ".join(f"{prefix}{column}" for column in columns)


# The fresh offers that are new or differ; the best flags are set afterwards.
WRITE_OFFERS_SQL = f"""
INSERT INTO pricing_offer (product_id, config_id, price_type, {_columns("", OFFER_COLUMNS)},
                           best, reason, updated_at)
SELECT f.product_id, f.config_id, f.price_type, {_columns("f.", OFFER_COLUMNS)},
       false, '{{}}'::jsonb, now()
  FROM o_fresh f
  LEFT JOIN LATERAL (
      SELECT * FROM pricing_offer x
       WHERE x.product_id = f.product_id AND x.config_id = f.config_id
         AND x.price_type = f.price_type
      OFFSET 0
  ) o ON true
 WHERE o.id IS NULL
    OR ({_columns("o.", OFFER_COLUMNS)}) IS DISTINCT FROM ({_columns("f.", OFFER_COLUMNS)})
ON CONFLICT (product_id, config_id, price_type) DO UPDATE
   SET ({_columns("", OFFER_COLUMNS)}, updated_at)
     = ({_columns("EXCLUDED.", OFFER_COLUMNS)}, now())
"""

# Offers of products in scope (of the config refreshed, if one) that are no more.
GONE_OFFERS_SQL = """
DELETE FROM pricing_offer WHERE id IN (
    SELECT o.id
      FROM o_scope s
     CROSS JOIN LATERAL (
         SELECT id, product_id, config_id, price_type FROM pricing_offer x
          WHERE x.product_id = s.product_id
            AND (%(config)s::bigint IS NULL OR x.config_id = %(config)s::bigint)
         OFFSET 0
     ) o
     WHERE NOT EXISTS (SELECT 1 FROM o_fresh f
                        WHERE f.product_id = o.product_id AND f.config_id = o.config_id
                          AND f.price_type = o.price_type))
"""

# Every offer of the products in scope, as the choice reads it.
READ_OFFERS_SQL = """
SELECT o.product_id, o.config_id, o.price_type, o.price_rub, o.in_stock, o.status,
       COALESCE(t.priority, 100), o.quantity, o.sku, o.price, o.currency, o.rate,
       o.rate_date, o.id, o.best, CASE WHEN o.best THEN o.reason END
  FROM o_scope s
 CROSS JOIN LATERAL (
     SELECT * FROM pricing_offer x WHERE x.product_id = s.product_id OFFSET 0
 ) o
  LEFT JOIN pricing_supplierterms t ON t.config_id = o.config_id
"""

# The offers whose mark changes (o_best: the new best ones with why, the old ones
# unmarked), by primary key.
BEST_SQL = """
UPDATE pricing_offer o SET best = b.best, reason = b.reason
  FROM o_best b
 WHERE o.id = b.id
"""

PRICE_COLUMNS = (
    "status", "price", "computed", "cost", "available", "quantity", "config_id", "rule_id",
    "audit",
)  # fmt: skip

# The prices that are new or differ; published_at moves when the published price or
# availability does.
WRITE_PRICES_SQL = f"""
INSERT INTO pricing_productprice (product_id, {_columns("", PRICE_COLUMNS)}, published_at,
                                  computed_at)
SELECT n.product_id, {_columns("n.", PRICE_COLUMNS)}, CASE WHEN n.published THEN now() END,
       now()
  FROM o_prices n
  LEFT JOIN LATERAL (
      SELECT * FROM pricing_productprice x WHERE x.product_id = n.product_id OFFSET 0
  ) o ON true
 WHERE o.product_id IS NULL
    OR ({_columns("o.", PRICE_COLUMNS)}) IS DISTINCT FROM ({_columns("n.", PRICE_COLUMNS)})
ON CONFLICT (product_id) DO UPDATE
   SET ({_columns("", PRICE_COLUMNS)}, published_at, computed_at) = (
       {_columns("EXCLUDED.", PRICE_COLUMNS)},
       CASE WHEN (EXCLUDED.price, EXCLUDED.available)
                 IS DISTINCT FROM (pricing_productprice.price, pricing_productprice.available)
            THEN now() ELSE pricing_productprice.published_at END,
       now())
"""


@dataclass
class Refreshed:
    """What a refresh did: products seen, offers written, best offers and published
    prices that changed, prices held, and seconds per stage."""

    products: int = 0
    offers: int = 0
    best_changed: int = 0
    published_changed: int = 0
    held: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, other: Refreshed) -> None:
        self.products += other.products
        self.offers += other.offers
        self.best_changed += other.best_changed
        self.published_changed += other.published_changed
        self.held += other.held
        for stage, took in other.seconds.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + took


def _dec(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _offer_rules() -> list[rules.OfferRuleSpec]:
    return [
        rules.OfferRuleSpec(r.category.strip(), r.strategy, r.price_type)
        for r in OfferRule.objects.all()
    ]


def _price_rules() -> list[rules.PriceRuleSpec]:
    return [
        rules.PriceRuleSpec(
            id=r.pk,
            name=r.name,
            config_id=r.config_id,
            category=r.category.strip(),
            brand=r.brand.casefold().strip(),
            cost_from=r.cost_from,
            cost_below=r.cost_below,
            markup_percent=r.markup_percent,
            fixed_add=r.fixed_add,
            rounding=r.rounding,
            min_margin_percent=r.min_margin_percent,
            respect_rrp=r.respect_rrp,
            rrp_type=r.rrp_type,
            hold_percent=r.hold_percent,
        )
        for r in PriceRule.objects.filter(enabled=True).order_by("position", "id")
    ]


def _temp(cursor: Any, name: str, columns: str) -> None:
    """A temporary table for this transaction (dropped first: a second refresh within
    one outer transaction, as in tests, finds the first one's)."""
    cursor.execute(f"DROP TABLE IF EXISTS {name}")
    cursor.execute(f"CREATE TEMP TABLE {name} {columns} ON COMMIT DROP")


def _scope(cursor: Any, product_ids: Iterable[int]) -> None:
    _temp(cursor, "o_scope", "(product_id bigint PRIMARY KEY)")
    with cursor.cursor.copy("COPY o_scope (product_id) FROM STDIN") as copy:
        for product_id in product_ids:
            copy.write_row((product_id,))
    cursor.execute("ANALYZE o_scope")


def _rows(cursor: Any, sql: str) -> list[tuple]:
    cursor.execute(sql)
    return cursor.fetchall()


def _refresh_scope(product_ids: Iterable[int], config_id: int | None = None) -> Refreshed:
    """Offers and prices of ``product_ids``, in the caller's transaction: the offers of
    every supplier made again from the lists (or, with ``config_id``, that supplier's
    only: the others' stand as they were last made), then the best and our price."""
    done = Refreshed()
    clock = time.perf_counter()
    seconds = done.seconds
    offer_rules = _offer_rules()
    price_rules = _price_rules()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('pricing.offers'))")
        cursor.execute("SET LOCAL jit = off")
        # Every statement here goes by key from the products in scope (a tenth of the
        # catalogue at most, usually far less): an index, never a scan of every offer,
        # link or line, even when the statistics of a table that just grew say otherwise.
        cursor.execute("SET LOCAL enable_seqscan = off")
        _scope(cursor, product_ids)
        cursor.execute("DROP TABLE IF EXISTS o_fresh")
        cursor.execute(
            FRESH_SQL,
            {
                "stale_days": STALE_DAYS,
                "window": settings.PRICEFEED_RATES_WINDOW_DAYS,
                "config": config_id,
            },
        )
        done.offers = cursor.rowcount
        cursor.execute("CREATE INDEX ON o_fresh (product_id, config_id, price_type)")
        cursor.execute("ANALYZE o_fresh")
        seconds["offers"] = time.perf_counter() - clock
        clock = time.perf_counter()
        products = {
            row[0]: row[1:]
            for row in _rows(
                cursor,
                "SELECT p.id, p.own_code, p.category, p.brand FROM o_scope s"
                " CROSS JOIN LATERAL (SELECT * FROM products_product x"
                " WHERE x.id = s.product_id OFFSET 0) p",
            )
        }
        old_best = {
            row[0]: row[1:]
            for row in _rows(
                cursor,
                "SELECT o.product_id, o.config_id, o.price_type, o.price_rub, o.in_stock"
                " FROM o_scope s CROSS JOIN LATERAL (SELECT * FROM pricing_offer x"
                " WHERE x.product_id = s.product_id AND x.best OFFSET 0) o",
            )
        }
        old_prices = {
            row[0]: row[1:]
            for row in _rows(
                cursor,
                "SELECT pp.product_id, pp.status, pp.price, pp.available"
                " FROM o_scope s CROSS JOIN LATERAL (SELECT * FROM pricing_productprice x"
                " WHERE x.product_id = s.product_id OFFSET 0) pp",
            )
        }
        names = dict(_rows(cursor, "SELECT id, name FROM pricefeed_pricelistconfig"))
        seconds["read"] = time.perf_counter() - clock
        clock = time.perf_counter()
        cursor.execute(WRITE_OFFERS_SQL)
        cursor.execute(GONE_OFFERS_SQL, {"config": config_id})
        seconds["write"] = time.perf_counter() - clock
        clock = time.perf_counter()
        fresh = _rows(cursor, READ_OFFERS_SQL)
        seconds["read"] += time.perf_counter() - clock
        clock = time.perf_counter()
        marks: list[tuple] = []  # (offer id, best, why) where that changes
        priced: list[tuple] = []
        offer_items: list[dict[str, Any]] = []
        price_items: list[dict[str, Any]] = []
        for product_id, offers in _by_product(fresh, products):
            own_code, category, brand = products[product_id]
            rule = rules.offer_rule_for(category, offer_rules)
            candidates = [rules.Candidate(*row[1:8]) for row in offers]
            choice = rules.choose(candidates, rule)
            best_row = None
            if choice.best is not None:
                best_row = next(
                    row
                    for row in offers
                    if row[1] == choice.best.config_id and row[2] == choice.best.price_type
                )
                # (the connection hands jsonb over as text, as Django wants it)
                if not best_row[14] or json.loads(best_row[15]) != choice.reason:
                    marks.append((best_row[13], True, json.dumps(choice.reason)))
            marks.extend(
                (row[13], False, "{}") for row in offers if row[14] and row is not best_row
            )
            before = old_best.get(product_id)
            now_best = (
                None if best_row is None else (best_row[1], best_row[2], best_row[3], best_row[4])
            )
            if before != now_best:
                offer_items.append(_offer_item(product_id, own_code, best_row, before, names))
            row = _price_row(
                product_id,
                category,
                brand,
                choice,
                best_row,
                offers,
                price_rules,
                old_prices.get(product_id),
            )
            priced.append(row.values)
            done.held += row.values[1] == HELD
            old = old_prices.get(product_id)
            was = (None, False) if old is None else (old[1], old[2])
            if (row.values[2], row.values[5]) != was:
                price_items.append(
                    _price_item(product_id, own_code, row.values[2], was[0], row.values[5])
                )
        done.products = len(products)
        seconds["decide"] = time.perf_counter() - clock
        clock = time.perf_counter()
        _temp(cursor, "o_best", "(id bigint PRIMARY KEY, best boolean, reason jsonb)")
        with cursor.cursor.copy("COPY o_best (id, best, reason) FROM STDIN") as copy:
            for values in marks:
                copy.write_row(values)
        cursor.execute(BEST_SQL)
        _temp(
            cursor,
            "o_prices",
            "(product_id bigint, status text, price numeric, computed numeric, cost numeric,"
            " available boolean, quantity numeric, config_id bigint, rule_id bigint,"
            " audit jsonb, published boolean)",
        )
        with cursor.cursor.copy(
            f"COPY o_prices (product_id, {_columns('', PRICE_COLUMNS)}, published) FROM STDIN"
        ) as copy:
            for values in priced:
                copy.write_row(values)
        cursor.execute(WRITE_PRICES_SQL)
        seconds["write"] += time.perf_counter() - clock
        clock = time.perf_counter()
        done.best_changed = len(offer_items)
        done.published_changed = len(price_items)
        _announce(offer_items, price_items)
        seconds["events"] = time.perf_counter() - clock
    return done


def _by_product(
    fresh: list[tuple], products: dict[int, tuple]
) -> Iterator[tuple[int, list[tuple]]]:
    """Each product in scope with its offers (none for a product without any)."""
    offers: dict[int, list[tuple]] = {}
    for row in fresh:
        offers.setdefault(row[0], []).append(row)
    for product_id in products:
        yield product_id, offers.get(product_id, [])


def _price_item(
    product_id: int,
    own_code: str,
    price: Decimal | None,
    before: Decimal | None,
    available: bool,
) -> dict[str, Any]:
    """A product's item of a ``price.changed`` event."""
    return {
        "product_id": product_id,
        "own_code": own_code,
        "price": _dec(price),
        "before": _dec(before),
        "currency": "RUB",
        "available": available,
    }


def _offer_item(
    product_id: int,
    own_code: str,
    best_row: tuple | None,
    before: tuple | None,
    names: dict[int, str],
) -> dict[str, Any]:
    best = None
    if best_row is not None:
        (
            _,
            config_id,
            price_type,
            price_rub,
            in_stock,
            _status,
            _priority,
            quantity,
            sku,
            price,
            currency,
            _rate,
            _rate_date,
            *_,
        ) = best_row
        best = {
            "config_id": config_id,
            "supplier": names.get(config_id, ""),
            "sku": sku,
            "price_type": price_type,
            "price": _dec(price),
            "currency": currency,
            "price_rub": _dec(price_rub),
            "in_stock": in_stock,
            "quantity": _dec(quantity),
        }
    previous = None
    if before is not None:
        previous = {
            "config_id": before[0],
            "supplier": names.get(before[0], ""),
            "price_type": before[1],
            "price_rub": _dec(before[2]),
            "in_stock": before[3],
        }
    return {"product_id": product_id, "own_code": own_code, "best": best, "before": previous}


@dataclass(frozen=True, slots=True)
class _PriceRow:
    # product_id, status, price, computed, cost, available, quantity, config_id,
    # rule_id, audit (json text), published (a new published price)
    values: tuple


def _price_row(
    product_id: int,
    category: str,
    brand: str,
    choice: rules.Choice,
    best_row: tuple | None,
    offers: list[tuple],
    price_rules: list[rules.PriceRuleSpec],
    old: tuple | None,
) -> _PriceRow:
    old_price = None if old is None else old[1]
    audit: dict[str, Any] = {"choice": choice.reason}
    if choice.best is None or choice.cost is None or best_row is None:
        return _PriceRow(
            (
                product_id,
                NO_OFFER,
                old_price,
                None,
                None,
                False,
                None,
                None,
                None,
                json.dumps(audit),
                False,
            )
        )
    config_id = best_row[1]
    audit["offer"] = {
        "config_id": config_id,
        "sku": best_row[8],
        "price_type": best_row[2],
        "price": _dec(best_row[9]),
        "currency": best_row[10],
        "rate": _dec(best_row[11]),
        "rate_date": None if best_row[12] is None else best_row[12].isoformat(),
        "price_rub": _dec(best_row[3]),
    }
    audit["cost"] = str(choice.cost)
    rule = rules.price_rule_for(
        price_rules, config_id=config_id, category=category, brand=brand, cost=choice.cost
    )
    if rule is None:
        return _PriceRow(
            (
                product_id,
                NO_RULE,
                old_price,
                None,
                choice.cost,
                False,
                best_row[7],
                config_id,
                None,
                json.dumps(audit),
                False,
            )
        )
    rrp = next(
        (
            row[3]
            for row in offers
            if row[1] == config_id and row[2] == rule.rrp_type and row[5] == "ok"
        ),
        None,
    )
    result = rules.price_of(choice.cost, rule, rrp)
    audit["rule"] = {"id": rule.id, "name": rule.name}
    audit["steps"] = result.steps
    audit["price"] = str(result.price)
    if rules.held(old_price, result.price, rule.hold_percent) and old_price != result.price:
        audit["held"] = {"published": str(old_price), "hold_percent": str(rule.hold_percent)}
        return _PriceRow(
            (
                product_id,
                HELD,
                old_price,
                result.price,
                choice.cost,
                choice.available,
                best_row[7],
                config_id,
                rule.id,
                json.dumps(audit),
                False,
            )
        )
    return _PriceRow(
        (
            product_id,
            PUBLISHED,
            result.price,
            result.price,
            choice.cost,
            choice.available,
            best_row[7],
            config_id,
            rule.id,
            json.dumps(audit),
            True,
        )
    )


def _chunks(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(items), EVENT_ITEMS):
        yield items[start : start + EVENT_ITEMS]


def _announce(offer_items: list[dict[str, Any]], price_items: list[dict[str, Any]]) -> None:
    """The events of the changes, and a new published version when a price changed."""
    if not offer_items and not price_items:
        return
    version = version_raise() if price_items else PublishedVersion.objects.get_or_create(pk=1)[0]
    for items in _chunks(offer_items):
        publish(OFFER_CHANGED, version, {"items": items})
    for items in _chunks(price_items):
        publish(PRICE_CHANGED, version, {"version": version.number, "items": items})


def version_raise() -> PublishedVersion:
    """The published prices' version, raised (in the caller's transaction)."""
    with connection.cursor() as cursor:
        # (Made here if missing: the migration's row is gone from a flushed database.)
        cursor.execute(
            "INSERT INTO pricing_publishedversion (id, number, changed_at) VALUES (1, 1, now())"
            " ON CONFLICT (id) DO UPDATE"
            " SET number = pricing_publishedversion.number + 1, changed_at = now()"
            " RETURNING number, changed_at"
        )
        number, changed_at = cursor.fetchone()
    return PublishedVersion(pk=1, number=number, changed_at=changed_at)


# -- scopes ---------------------------------------------------------------------------


def offers_refresh(product_ids: Iterable[int]) -> Refreshed:
    """Offers and prices of these products, in one transaction."""
    wanted = sorted(set(product_ids))
    if not wanted:
        return Refreshed()
    with transaction.atomic(), gc_paused():
        done = _refresh_scope(wanted)
    _logged("products", done)
    return done


def config_products(config_id: int) -> list[int]:
    """The products a config's offers are or were for: its offering links' products and
    those it has offers for (a link that went)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT product_id FROM products_supplierlink"
            " WHERE config_id = %s AND state IN ('auto', 'confirmed')"
            " UNION SELECT product_id FROM pricing_offer WHERE config_id = %s",
            [config_id, config_id],
        )
        return [row[0] for row in cursor.fetchall()]


def config_offers_refresh(config_id: int) -> Refreshed:
    """After a config's list was accepted and matched: its products' offers and prices."""
    with transaction.atomic(), gc_paused():
        done = _refresh_scope(sorted(config_products(config_id)), config_id)
    _logged(f"config {config_id}", done)
    return done


def _everything(first: int = 0, last: int = 2**63 - 1) -> list[int]:
    """Every product with a link that offers, an offer or a price (from ``first`` to
    ``last``), in order."""
    within = "product_id BETWEEN %(first)s AND %(last)s"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT product_id FROM products_supplierlink"
            f" WHERE state IN ('auto', 'confirmed') AND {within}"
            f" UNION SELECT product_id FROM pricing_offer WHERE {within}"
            f" UNION SELECT product_id FROM pricing_productprice WHERE {within}",
            {"first": first, "last": last},
        )
        return sorted(row[0] for row in cursor.fetchall())


def all_offers_refresh(chunk: int = ALL_CHUNK) -> Refreshed:
    """Every product with a link, an offer or a price, ``chunk`` products per
    transaction, here and now (``offers_refresh``; the workers split it: parts_publish)."""
    everything = _everything()
    total = Refreshed()
    for start in range(0, len(everything), chunk):
        with transaction.atomic(), gc_paused():
            total.add(_refresh_scope(everything[start : start + chunk]))
    _logged("all", total)
    return total


def parts_publish(chunk: int | None = None) -> int:
    """A refresh of everything as parts of ``chunk`` products, each an event of its own
    (``pricing.refresh_part``: first and last product id) for the workers to take one by
    one: a million products are a hundred tasks of seconds, none near the task timeout.
    In the caller's transaction; returns how many parts."""
    chunk = chunk or ALL_CHUNK
    everything = _everything()
    parts = [
        (everything[start], everything[min(start + chunk, len(everything)) - 1])
        for start in range(0, len(everything), chunk)
    ]
    version = PublishedVersion(pk=1)
    for first, last in parts:
        publish(REFRESH_PART, version, {"first": first, "last": last})
    return len(parts)


def part_refresh(first: int, last: int) -> Refreshed:
    """One part of a refresh of everything: the products from ``first`` to ``last``."""
    return offers_refresh(_everything(first, last))


def _logged(scope: str, done: Refreshed) -> None:
    logger.info(
        "offers refreshed scope=%s products=%s offers=%s best_changed=%s"
        " published_changed=%s held=%s seconds=%s",
        scope,
        done.products,
        done.offers,
        done.best_changed,
        done.published_changed,
        done.held,
        " ".join(f"{stage}:{took:.2f}" for stage, took in done.seconds.items()),
        extra={"action": "offers_refresh"},
    )


# -- lists that went stale -----------------------------------------------------------

# Configs whose newest list is older than their terms allow while some of their offers
# still count, and no refresh of them is waiting already.
STALE_SQL = """
SELECT c.id
  FROM pricefeed_pricelistconfig c
  LEFT JOIN pricing_supplierterms t ON t.config_id = c.id
 CROSS JOIN LATERAL (
     SELECT COALESCE(m.sent_at, i.accepted_at) AS list_date
       FROM pricefeed_priceimport i
       JOIN mailboxes_inboundmessage m ON m.id = i.message_id
      WHERE i.config_id = c.id AND i.accepted_at IS NOT NULL
      ORDER BY i.accepted_at DESC, i.id DESC LIMIT 1
 ) x
 WHERE x.list_date < now() - COALESCE(t.stale_days, %(stale_days)s) * interval '1 day'
   AND EXISTS (SELECT 1 FROM pricing_offer o WHERE o.config_id = c.id AND o.status = 'ok')
   AND NOT EXISTS (
       SELECT 1 FROM outbox_outboxevent e
        WHERE e.status IN ('NEW', 'PROCESSING') AND e.kind = %(kind)s
          AND e.aggregate_type = 'pricefeed.pricelistconfig'
          AND e.aggregate_id = c.id::text)
"""


def stale_sweep() -> list[int]:
    """The sweep: a config whose list went stale has its offers made again (they stop
    counting); returns the configs asked for. One instance at a time asks."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(hashtext('pricing.stale'))")
        if not cursor.fetchone()[0]:
            return []
        cursor.execute(STALE_SQL, {"stale_days": STALE_DAYS, "kind": LINKS_CHANGED})
        stale = [row[0] for row in cursor.fetchall()]
        for config_id in stale:
            config_links_changed(config_id, None)
    if stale:
        logger.info(
            "stale lists: offers to be made again configs=%s",
            stale,
            extra={"action": "offers_stale"},
        )
    return stale


# -- requests and approvals -----------------------------------------------------------


def refresh_requested(reason: str) -> None:
    """Every offer and price is to be computed again (rules, terms or rates changed):
    an event in the caller's transaction, handled by pricing.handlers.refresh_all."""
    publish(REFRESH, PublishedVersion(pk=1), {"reason": reason})  # (the aggregate's id only)


class NotHeld(Exception):
    """The price is no longer held (approved meanwhile, or computed again)."""


def price_approve(product_id: int, *, computed: Decimal, user: Any) -> ProductPrice:
    """Publishes a held price: the one the person saw (``computed``), if it is still
    the one held; announces it and raises the published version."""
    with transaction.atomic():
        price = (
            ProductPrice.objects.select_for_update()
            .select_related("product")
            .filter(product_id=product_id)
            .first()
        )
        if price is None or price.status != HELD or price.computed != computed:
            raise NotHeld(product_id)
        before = price.price
        price.status = PUBLISHED
        price.price = price.computed
        price.approved_by = user
        price.published_at = timezone.now()
        price.audit = {**price.audit, "approved_by": user.get_username()}
        price.save()
        version = version_raise()
        publish(
            PRICE_CHANGED,
            version,
            {
                "version": version.number,
                "items": [
                    _price_item(
                        product_id, price.product.own_code, price.price, before, price.available
                    )
                ],
            },
        )
    logger.info(
        "price approved product=%s price=%s before=%s user=%s",
        product_id,
        price.price,
        before,
        user.pk,
        extra={"action": "price_approved", "product_id": product_id},
    )
    return price
