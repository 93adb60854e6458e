"""Offers and our prices, kept up to date for a set of products in one transaction.

For the products in scope: every linked line of every supplier (links ``auto`` or
``confirmed``, the config's current catalogue entry) becomes an offer per price type,
converted to roubles at the list's date (the config's newest accepted list's: its
catalogue is as of it); the best offer and our price with its audit follow by the rules
of pricing.rules. All of it is done in PostgreSQL over the whole set, a statement per
step into temporary tables (o_all, o_choice, o_prices): a product at a time in
Python cost ~80 µs each, most of it moving rows to Python and back. Python only maps
the few distinct categories and brands in scope to their rules (rules.offer_rule_for,
rules.in_category, casefold), so that the statements compare as the rules do. What
changed is written back with a statement or two per table, each row once, and announced in
the same transaction as ``offer.changed`` and ``price.changed`` outbox events, each
carrying up to EVENT_ITEMS products, made by PostgreSQL (outbox.services.publish_select:
the items never come to Python). A price that moves more than its rule allows is
held for approval (``price_approve``). A config's refresh makes that config's offers
again and reads the others' only for the products whose price does not say enough of
them (KNOWN_SQL).

Refreshes of the same products never interleave, and each sees the last one's result:
a refresh holds, until it commits, the advisory locks of its products' buckets (a
product's bucket: its block of BUCKET_IDS consecutive ids, the blocks dealt out to the
LOCK_BUCKETS buckets in turn), taken in ascending order. A config's refresh outside a
transaction runs as ``PRICEFEED_OFFERS_PARTS`` parts side by side, each a transaction
on its own connection with the buckets of its own (part k of n: the buckets b with
b % n = k): the statements are PostgreSQL's work, and one session uses one of the
server's cores. Each part commits with its events; a part that fails leaves the others
done, and running the refresh again completes it (a refresh only writes and announces
what differs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.parts import side_by_side
from outbox.services import publish, publish_select
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
WORK_MEM = "64MB"  # per sort or hash of a refresh
STATISTICS_TARGET = 10  # of the offers in scope (o_all): a sample of 300 x this many rows
LOCK_BUCKETS = 16  # advisory locks over the products (a fixed power of 2: every instance's)
BUCKET_IDS = 1024  # consecutive product ids per block (a power of 2)
# A product's bucket, in SQL: its block of BUCKET_IDS ids, the blocks dealt out to the
# buckets in turn. The offers and prices of a block's products lie together on disk (a
# config's offers and the prices are in product order), so the parts of a refresh,
# each with its own buckets, read and write pages of their own: by a hash of the id,
# both parts touched nearly every page, each one dirtying and writing out pages the
# other read (docs/benchmarks.md). A list's products, spread over the catalogue, fall in
# every bucket; a list of ids close together (a few thousand) can fall in a few.
BUCKET = f"((product_id / {BUCKET_IDS}) & {LOCK_BUCKETS - 1})"
# The locks of the buckets given, in the order given (ascending, as every refresh takes
# them: no deadlock), held until the transaction ends.
LOCK_SQL = (
    "SELECT count(pg_advisory_xact_lock(hashtext('pricing.offers'), b)) FROM unnest(%s::int[]) b"
)
# The write-ahead log of a refresh compressed, for its transaction, where the server
# leaves it uncompressed and the role may set it (a superuser, or GRANT SET ON PARAMETER
# wal_compression, PostgreSQL 15): a list's refresh touches pages spread over the whole
# catalogue, most of them for the first time since the last checkpoint, so most of its
# log is whole pages (~1.1 GB for a 100k-line list over 1M products); compressed, the
# writes take ~40 % less (docs/benchmarks.md).
WAL_COMPRESSION_SQL = """
SELECT set_config('wal_compression', CASE WHEN 'lz4' = ANY (enumvals) THEN 'lz4' ELSE 'pglz' END,
                  true)
  FROM pg_settings
 WHERE name = 'wal_compression' AND setting = 'off'
   AND has_parameter_privilege('wal_compression', 'SET')
"""
# The wide values a refresh stores (its events' payloads, EVENT_ITEMS products each,
# hundreds of kB, in the outbox and in o_price_events) compressed with lz4 where the
# server has it rather than with the default pglz, for its transaction: making a list's
# events took ~15 % less (docs/benchmarks.md). PostgreSQL reads both; nothing else
# changes.
TOAST_COMPRESSION_SQL = """
SELECT set_config('default_toast_compression', 'lz4', true)
  FROM pg_settings
 WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)
"""
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
# cheapest. (A query of its own: ALL_SQL reads it.)
FRESH_SQL = """
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
           e.price, upper(btrim(COALESCE(e.currency, ''))) AS currency, e.quantity,
           e.stock_kind, e.prices,
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
     -- (a line with no other prices, as most are, never reaches jsonb_each: a call per
     -- line of nothing cost a tenth of the statement)
     WHERE jsonb_typeof(e.prices) = 'object' AND e.prices <> '{}'::jsonb
       AND length(p.key) <= 32
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


def _columns(prefix: str, columns: tuple[str, ...], alias: str = "") -> str:
    """``prefix`` before each column; ``alias`` ("AS old_"): each named, that before."""
    return ", ".join(f"{prefix}{column}{alias and alias + column}" for column in columns)


# The products in scope as the rules read them.
PRODUCTS_SQL = """
CREATE TEMP TABLE o_product ON COMMIT DROP AS
SELECT p.id AS product_id, p.own_code, p.category, p.brand
  FROM o_scope s
 CROSS JOIN LATERAL (SELECT id, own_code, category, brand FROM products_product x
                      WHERE x.id = s.product_id OFFSET 0) p
"""

# The offers of the products in scope as they stand now, with their marks and where
# each row is (tid, its ctid: UPDATE_OFFERS_SQL writes it there): of the config
# refreshed, or of every config. (In a config's refresh the others' offers go
# straight into o_all: copied here first, they were four rows in five of this table.)
OLD_SQL = f"""
CREATE TEMP TABLE o_old ON COMMIT DROP AS
SELECT o.id, o.tid, o.product_id, o.config_id, o.price_type, {_columns("o.", OFFER_COLUMNS)},
       o.best, o.reason
  FROM o_scope s
 CROSS JOIN LATERAL (SELECT *, ctid AS tid FROM pricing_offer x
                      WHERE x.product_id = s.product_id
                        AND (%(config)s::bigint IS NULL OR x.config_id = %(config)s::bigint)
                     OFFSET 0) o
"""

# What of an offer a price and its audit read (not the list's date nor its entry: a list
# sent again with the same prices moves no price).
PRICED_COLUMNS = (
    "sku", "price", "currency", "price_rub", "rate", "rate_date", "quantity", "in_stock",
    "status",
)  # fmt: skip

# The audit (ProductPrice.audit), as typed columns.
AUDIT_COLUMNS = (
    "choice", "offer_sku", "offer_price_type", "offer_price", "offer_currency", "offer_rate",
    "offer_rate_date", "offer_price_rub", "rule_name", "markup_percent", "marked",
    "fixed_add", "added", "min_margin_percent", "floor", "rounding", "rounded", "rrp",
    "held_from", "hold_percent",
)  # fmt: skip
PRICE_COLUMNS = (
    "status", "price", "computed", "cost", "available", "quantity", "config_id", "rule_id",
    *AUDIT_COLUMNS,
)  # fmt: skip

# Every offer of the products in scope as it will be (the best marks aside), as fresh
# from the lists (FRESH_SQL, typed as the table keeps them), each with what it was
# (old_id and old_tid: its row and where it is), whether it changed, and whether what a
# price reads of it did (moved). In a config's refresh these are that config's; the
# others' follow (KNOWN_SQL), a row per product where the product's price says enough
# of them (rest), else as they stand (OTHERS_SQL). A rest row stands for all the other
# configs' offers of the rule's price type: their best (if one counts) and their counts
# (rest_offers, rest_counted, rest_stocked).
ALL_SQL = f"""
CREATE TEMP TABLE o_all ON COMMIT DROP AS
SELECT f.product_id, f.config_id, f.price_type, {_columns("f.", OFFER_COLUMNS)},
       f.priority, o.best AS old_best, o.reason AS old_reason, o.id AS old_id,
       o.tid AS old_tid,
       o.id IS NULL OR ({_columns("o.", OFFER_COLUMNS)})
                       IS DISTINCT FROM ({_columns("f.", OFFER_COLUMNS)}) AS changed,
       o.id IS NULL OR ({_columns("o.", PRICED_COLUMNS)})
                       IS DISTINCT FROM ({_columns("f.", PRICED_COLUMNS)}) AS moved,
       false AS rest, NULL::int AS rest_offers, NULL::int AS rest_counted,
       NULL::int AS rest_stocked
  FROM (SELECT product_id, config_id, price_type, sku, price::numeric(18, 4) AS price,
               currency, price_rub::numeric(18, 4) AS price_rub,
               rate::numeric(18, 8) AS rate, rate_date, quantity::numeric(18, 4) AS quantity,
               in_stock, list_date, entry_id, status, priority
          FROM ({FRESH_SQL}) fresh) f
  LEFT JOIN o_old o
    ON o.product_id = f.product_id AND o.config_id = f.config_id
   AND o.price_type = f.price_type
"""

# Per product: its price as it stands (existed: it has one; PRICES_SQL compares with it)
# and, in a config's refresh, what it says of the last choice, made over every config's
# offers as they stood, and whether that is enough to choose again
# without reading the other configs' offers (known). It is when the offer rule is the
# same one (not the average, which reads every offer) and the refreshed config's offer
# of the rule's price type was not the best, or was and is as good still: the others'
# offers have not changed since (only a refresh writes offers, and it computes the
# prices of the products it touches), so their best is the price's best offer (or,
# where this config's was the best, beaten by this config's new one), and their counts
# are the choice's less this config's old offer. A price that names no config although
# an offer was the best (its supplier deleted), or none at all, is not known.
KNOWN_SQL = f"""
CREATE TEMP TABLE o_known ON COMMIT DROP AS
WITH p AS (
    SELECT p.product_id, COALESCE(c.strategy, 'cheapest') AS strategy,
           COALESCE(c.price_type, '') AS rule_type
      FROM o_product p
      LEFT JOIN o_category c ON c.category = p.category
), x AS (
    SELECT p.*, o.id AS old_id, o.best AS old_best,
           o.status = 'ok' AND o.price_rub IS NOT NULL AS old_counts,
           o.in_stock AS old_in_stock, o.price_rub AS old_price_rub,
           a.status = 'ok' AND a.price_rub IS NOT NULL AS new_counts,
           a.in_stock AS new_in_stock, a.price_rub AS new_price_rub
      FROM p
      LEFT JOIN o_old o ON %(config)s::bigint IS NOT NULL AND o.product_id = p.product_id
                       AND o.price_type = p.rule_type
      LEFT JOIN o_all a ON %(config)s::bigint IS NOT NULL AND a.product_id = p.product_id
                       AND a.price_type = p.rule_type
)
SELECT x.product_id, x.rule_type, w.product_id IS NOT NULL AS existed, w.tid,
       {_columns("w.", PRICE_COLUMNS)},
       COALESCE(%(config)s::bigint IS NOT NULL AND x.strategy <> 'average'
                AND w.choice->>'strategy' = x.strategy
                AND w.choice->>'price_type' = x.rule_type
                AND CASE WHEN w.choice->>'why' = 'none_counts'
                         THEN w.config_id IS NULL AND x.old_best IS NOT TRUE
                         WHEN w.config_id = %(config)s::bigint
                         THEN x.old_best AND x.new_counts
                              AND (NOT x.new_in_stock, x.new_price_rub)
                                  <= (NOT x.old_in_stock, x.old_price_rub)
                         ELSE w.config_id IS NOT NULL AND x.old_best IS NOT TRUE END,
                false) AS known,
       (w.choice->>'offers')::int - (x.old_id IS NOT NULL)::int AS offers,
       (w.choice->>'counted')::int - COALESCE(x.old_counts, false)::int AS counted,
       COALESCE((w.choice->>'in_stock')::int, 0)
       - COALESCE(x.old_counts AND x.old_in_stock, false)::int AS stocked
  FROM x
  LEFT JOIN LATERAL (SELECT *, ctid AS tid FROM pricing_productprice y
                      WHERE y.product_id = x.product_id OFFSET 0) w ON true
"""

# The rest rows of o_all (ALL_SQL): the other configs' best as the price names it, where
# it is another config's offer (else none counts), and their counts.
REST_SQL = """
INSERT INTO o_all (product_id, config_id, price_type, sku, price, currency, price_rub, rate,
                   rate_date, quantity, in_stock, status, priority, old_best, old_reason,
                   changed, moved, rest, rest_offers, rest_counted, rest_stocked)
SELECT k.product_id, b.config_id, k.rule_type, b.offer_sku, b.offer_price, b.offer_currency,
       b.offer_price_rub, b.offer_rate, b.offer_rate_date, b.quantity,
       COALESCE(b.in_stock, false), COALESCE(b.status, 'rest'),
       COALESCE(t.priority, 100), b.config_id IS NOT NULL, b.choice, false, false, true,
       k.offers, k.counted, k.stocked
  FROM o_known k
  LEFT JOIN LATERAL (
      SELECT k.config_id, k.offer_sku, k.offer_price, k.offer_currency, k.offer_price_rub,
             k.offer_rate, k.offer_rate_date, k.quantity, k.choice,
             (k.choice->>'in_stock')::int > 0 AS in_stock, 'ok' AS status
       WHERE k.config_id <> %(config)s::bigint
  ) b ON true
  LEFT JOIN pricing_supplierterms t ON t.config_id = b.config_id
 WHERE k.known AND k.offers > 0
"""

# The other configs' offers as they stand, of the products not known. (Written as the
# two ranges of configs on either side rather than <>: both are searched in the index,
# so the refreshed config's own offer, on a page of its own, is not fetched to be left
# out: a third fewer pages read.)
OTHERS_SQL = f"""
INSERT INTO o_all
SELECT o.product_id, o.config_id, o.price_type, {_columns("o.", OFFER_COLUMNS)},
       COALESCE(t.priority, 100), o.best, o.reason, o.id, o.tid, false, false, false, NULL,
       NULL, NULL
  FROM o_known k
 CROSS JOIN LATERAL (SELECT *, ctid AS tid FROM pricing_offer x
                      WHERE x.product_id = k.product_id
                        AND (x.config_id < %(config)s::bigint OR x.config_id > %(config)s::bigint)
                     OFFSET 0) o
  LEFT JOIN pricing_supplierterms t ON t.config_id = o.config_id
 WHERE NOT k.known
"""

# Per product: the offer rule of its category, its offers of the rule's price type
# counted, and the best of those that count (rules.choose, over sets), with why; and
# whether its price is settled: in a config's refresh, the best is the offer that was
# the best already, for the same reasons (the same counts), by a rule other than the
# average (which reads every offer), and no offer of its config for the product moved,
# came or went (the best itself, the recommended price beside it). The price then has
# the inputs it was computed from (the rules and the product's category and brand, when
# they change, ask for a refresh of their own that computes every price it reaches:
# pricing.refresh, products.changed). Another config's offers are as they stood; a list
# sent again with the same prices settles every price.
# What a product's reason (o_choice) says in every case: the rule it was chosen by; and
# when an offer counts, the offers' counts and why the best is best.
REASON_RULE = "'strategy', n.strategy, 'rule_category', n.rule_category, 'price_type', n.rule_type"
REASON_STOCK = (
    "'offers', n.offers, 'counted', n.counted, 'in_stock', n.stocked,"
    " 'why', CASE WHEN n.stocked > 0 THEN n.strategy ELSE 'out_of_stock' END"
)

CHOICE_SQL = f"""
CREATE TEMP TABLE o_choice ON COMMIT DROP AS
WITH typed AS (
    -- Each product in scope with its rules, and each of its offers of the rule's price
    -- type (one row of NULLs where it has none) ...
    SELECT p.product_id, p.own_code, COALESCE(c.strategy, 'cheapest') AS strategy,
           COALESCE(c.rule_category, '') AS rule_category,
           COALESCE(c.price_type, '') AS rule_type,
           COALESCE(c.price_rules, '{{}}') AS category_rules,
           COALESCE(b.price_rules, '{{}}') AS brand_rules,
           a.config_id, a.price_type, a.sku, a.price, a.currency, a.price_rub, a.rate,
           a.rate_date, a.quantity, a.in_stock, a.priority, a.old_best, a.old_reason, a.rest,
           COALESCE(a.status = 'ok' AND a.price_rub IS NOT NULL, false) AS counts,
           -- (a rest row counts for the other configs' offers: ALL_SQL)
           CASE WHEN a.product_id IS NOT NULL THEN COALESCE(a.rest_offers, 1) ELSE 0 END
               AS offers_of,
           COALESCE(a.rest_counted, (a.status = 'ok' AND a.price_rub IS NOT NULL)::int, 0)
               AS counted_of,
           COALESCE(a.rest_stocked,
                    (a.status = 'ok' AND a.price_rub IS NOT NULL AND a.in_stock)::int, 0)
               AS stocked_of
      FROM o_product p
      LEFT JOIN o_category c ON c.category = p.category
      LEFT JOIN o_brand b ON b.brand = p.brand
      LEFT JOIN o_all a
        ON a.product_id = p.product_id AND a.price_type = COALESCE(c.price_type, '')
), ranked AS (
    -- ... in one sort: a product's offers best first (those that count before the
    -- others), each row with the product's counts.
    SELECT typed.*, row_number() OVER w AS rank, sum(offers_of) OVER w AS offers,
           sum(counted_of) OVER w AS counted, sum(stocked_of) OVER w AS stocked,
           -- (averages only where the rule is the average: a numeric sum per product
           -- cost a sixth of the statement)
           avg(price_rub) FILTER (WHERE counts AND in_stock AND strategy = 'average') OVER w
               AS stocked_average,
           avg(price_rub) FILTER (WHERE counts AND strategy = 'average') OVER w AS average
      FROM typed
    WINDOW w AS (PARTITION BY product_id
                 ORDER BY counts DESC, in_stock DESC,
                          CASE WHEN strategy = 'priority' THEN priority END, price_rub,
                          priority, config_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
), n AS (
    -- (one row per product: its best, if one counts)
    SELECT * FROM ranked WHERE rank = 1
), touched AS (
    -- The configs whose offers of a product moved or came (o_all), or went (the
    -- refreshed config's offers as they stood that are no more).
    SELECT product_id, config_id FROM o_all WHERE moved
    UNION
    SELECT o.product_id, o.config_id FROM o_old o
     WHERE o.config_id = %(config)s::bigint
       AND NOT EXISTS (SELECT 1 FROM o_all a
                        WHERE a.product_id = o.product_id AND a.config_id = o.config_id
                          AND a.price_type = o.price_type)
), chosen AS (
SELECT n.product_id, n.own_code, n.category_rules, n.brand_rules, n.strategy,
       b.old_best, b.old_reason, b.rest,
       b.config_id, b.price_type, b.sku, b.price, b.currency, b.price_rub, b.rate,
       b.rate_date, b.quantity, b.in_stock,
       CASE WHEN b.product_id IS NULL THEN NULL
            WHEN n.strategy = 'average'
            THEN round(CASE WHEN n.stocked > 0 THEN n.stocked_average ELSE n.average END, 4)
            ELSE b.price_rub END AS cost,
       n.stocked > 0 AS available,
       -- (each reason one call: joining objects with || costs a third more)
       CASE WHEN b.product_id IS NULL
            THEN jsonb_build_object({REASON_RULE}, 'offers', n.offers,
                                    'counted', n.counted, 'why', 'none_counts')
            WHEN n.strategy = 'average'
            THEN jsonb_build_object({REASON_RULE}, {REASON_STOCK},
                                    'average_of', CASE WHEN n.stocked > 0 THEN n.stocked
                                                       ELSE n.counted END)
            ELSE jsonb_build_object({REASON_RULE}, {REASON_STOCK})
       END AS reason
  FROM n
  LEFT JOIN LATERAL (SELECT n.* WHERE n.counts) b ON true
)
SELECT product_id, own_code, category_rules, brand_rules, config_id, price_type, sku, price,
       currency, price_rub, rate, rate_date, quantity, in_stock, cost, available, reason,
       COALESCE(rest, false) AS rest,
       COALESCE(%(config)s::bigint IS NOT NULL AND strategy <> 'average' AND old_best
                AND old_reason = reason
                AND NOT EXISTS (SELECT 1 FROM touched t WHERE t.product_id = chosen.product_id
                                   AND t.config_id = chosen.config_id), false) AS settled
  FROM chosen
"""

# Per product: the first price rule that applies, our price by its steps
# (rules.price_of, over sets), held or published, with the audit; whether it differs
# from the price as it stands (to write only what changed), and the published price
# and availability before (to announce what moved). The old row is compared here and
# not kept: a row of o_prices is half as wide without it.
PRICES_SQL = f"""
CREATE TEMP TABLE o_prices ON COMMIT DROP AS
WITH ruled AS (
    SELECT c.*, r.id AS rule_id, r.name AS rule_name, r.markup_percent, r.fixed_add,
           r.rounding, r.min_margin_percent, r.hold_percent,
           CASE WHEN r.respect_rrp THEN COALESCE(rrp.price_rub, stored.price_rub) END AS rrp,
           c.cost * (1 + r.markup_percent / 100) AS marked,
           c.cost * (1 + r.markup_percent / 100) + r.fixed_add AS added,
           c.cost * (1 + r.min_margin_percent / 100) AS floor
      FROM o_choice c
      LEFT JOIN LATERAL (
          SELECT * FROM o_rule r
           WHERE c.cost IS NOT NULL AND r.id = ANY (c.category_rules)
             AND r.id = ANY (c.brand_rules)
             AND (r.config_id IS NULL OR r.config_id = c.config_id)
             AND (r.cost_from IS NULL OR c.cost >= r.cost_from)
             AND (r.cost_below IS NULL OR c.cost < r.cost_below)
           ORDER BY r.ordinal LIMIT 1
      ) r ON true
      LEFT JOIN o_all rrp
        ON rrp.product_id = c.product_id AND rrp.config_id = c.config_id
       AND rrp.price_type = r.rrp_type AND rrp.status = 'ok'
      -- (the best from a rest row: its config's recommended price as it stands)
      LEFT JOIN LATERAL (
          SELECT x.price_rub FROM pricing_offer x
           WHERE c.rest AND r.respect_rrp AND x.product_id = c.product_id
             AND x.config_id = c.config_id AND x.price_type = r.rrp_type
             AND x.status = 'ok' OFFSET 0
      ) stored ON true
     WHERE NOT c.settled
    OFFSET 0
), floored AS (
    SELECT ruled.*, floor IS NOT NULL AND added < floor AS raised,
           CASE WHEN floor IS NOT NULL AND added < floor THEN floor ELSE added END AS raw
      FROM ruled OFFSET 0
), rounded AS (
    SELECT floored.*,
           round(CASE rounding
                     WHEN '0.1' THEN ceil(raw * 10) / 10
                     WHEN '1' THEN ceil(raw)
                     WHEN '10' THEN ceil(raw / 10) * 10
                     WHEN '.90' THEN ceil(raw) - 0.10 + CASE WHEN ceil(raw) - 0.10 < raw
                                                            THEN 1 ELSE 0 END
                     WHEN '.99' THEN ceil(raw) - 0.01 + CASE WHEN ceil(raw) - 0.01 < raw
                                                            THEN 1 ELSE 0 END
                     ELSE ceil(raw * 100) / 100 END, 2) AS round_price
      FROM floored OFFSET 0
), priced AS (
    SELECT rounded.*, rrp IS NOT NULL AND round_price < rrp AS to_rrp,
           CASE WHEN rrp IS NOT NULL AND round_price < rrp THEN round(ceil(rrp * 100) / 100, 2)
                ELSE round_price END AS new_price
      FROM rounded OFFSET 0
), judged AS (
    SELECT priced.*, old.existed, old.tid, old.status AS old_status,
           old.price AS old_price, old.computed AS old_computed, old.cost AS old_cost,
           old.available AS old_available, old.quantity AS old_quantity,
           old.config_id AS old_config_id, old.rule_id AS old_rule_id,
           {_columns("old.", AUDIT_COLUMNS, " AS old_")},
           old.price IS NOT NULL AND priced.hold_percent IS NOT NULL AND old.price > 0
           AND abs(new_price - old.price) * 100 > priced.hold_percent * old.price
           AND old.price <> new_price AS held
      FROM priced
      JOIN o_known old ON old.product_id = priced.product_id
    OFFSET 0
), made AS (
    SELECT product_id, own_code, existed, tid, old_status, old_price, old_computed, old_cost,
           old_available, old_quantity, old_config_id, old_rule_id,
           {_columns("old_", AUDIT_COLUMNS)},
           CASE WHEN cost IS NULL THEN 'no_offer' WHEN rule_id IS NULL THEN 'no_rule'
                WHEN held THEN 'held' ELSE 'published' END AS status,
           CASE WHEN cost IS NULL OR rule_id IS NULL OR held THEN old_price
                ELSE new_price END AS price,
           CASE WHEN rule_id IS NOT NULL THEN new_price END AS computed,
           cost,
           cost IS NOT NULL AND rule_id IS NOT NULL AND available AS available,
           CASE WHEN cost IS NOT NULL THEN quantity END AS quantity,
           CASE WHEN cost IS NOT NULL THEN config_id END AS config_id,
           rule_id,
           -- the audit: the choice; the best offer, where one counts ...
           reason AS choice,
           CASE WHEN cost IS NOT NULL THEN sku ELSE '' END AS offer_sku,
           CASE WHEN cost IS NOT NULL THEN price_type ELSE '' END AS offer_price_type,
           CASE WHEN cost IS NOT NULL THEN price END AS offer_price,
           CASE WHEN cost IS NOT NULL THEN currency ELSE '' END AS offer_currency,
           CASE WHEN cost IS NOT NULL THEN rate END AS offer_rate,
           CASE WHEN cost IS NOT NULL THEN rate_date END AS offer_rate_date,
           CASE WHEN cost IS NOT NULL THEN price_rub END AS offer_price_rub,
           -- ... the rule's steps, where one applies (its columns NULL where none) ...
           COALESCE(rule_name, '') AS rule_name, markup_percent, round(marked, 4) AS marked,
           CASE WHEN fixed_add <> 0 THEN fixed_add END AS fixed_add,
           CASE WHEN fixed_add <> 0 THEN round(added, 4) END AS added,
           CASE WHEN raised THEN min_margin_percent END AS min_margin_percent,
           CASE WHEN raised THEN round(floor, 4) END AS floor,
           COALESCE(rounding, '') AS rounding, round_price AS rounded,
           CASE WHEN to_rrp THEN rrp END AS rrp,
           -- ... and the hold
           CASE WHEN held THEN old_price END AS held_from,
           CASE WHEN held THEN hold_percent END AS hold_percent
      FROM judged
)
SELECT product_id, own_code, existed, tid, old_price, old_available,
       {_columns("", PRICE_COLUMNS)}, status = 'published' AS published,
       NOT existed OR ({_columns("old_", PRICE_COLUMNS)})
                      IS DISTINCT FROM ({_columns("", PRICE_COLUMNS)}) AS differs
  FROM made
"""

# Whether offer a (o_all) is the best o_choice c chose for its product.
BEST = "COALESCE(c.config_id = a.config_id AND c.price_type = a.price_type, false)"
# The offers of o_all (a), each with its product's choice (c) and its mark (m.best) ...
MARKED = f"""o_all a
  LEFT JOIN o_choice c ON c.product_id = a.product_id
 CROSS JOIN LATERAL (SELECT {BEST} AS best) m"""
# ... and the reason that goes with the mark: why, for the best; nothing for the others.
MARK_REASON = "CASE WHEN m.best THEN c.reason ELSE '{}'::jsonb END"

# What changed of the offers: the different ones and the best marks that move, each row
# written once, where it was read (o_all.old_tid, its ctid; checked to be the row read):
# no index searched (~15 % less than finding each by its id), and rather than INSERT ...
# ON CONFLICT, which first locks each row it finds, a log record of its own per row. A
# row is where it was read: the offers were read in this transaction, under the locks
# of their buckets, and only a refresh, holding them, writes offers. (The check is
# written IS NOT DISTINCT FROM: written =, it has the planner search the index instead.)
UPDATE_OFFERS_SQL = f"""
UPDATE pricing_offer o
   SET ({_columns("", OFFER_COLUMNS)}, best, reason, updated_at)
     = ({_columns("a.", OFFER_COLUMNS)}, m.best, {MARK_REASON},
        CASE WHEN ({_columns("o.", OFFER_COLUMNS)})
                  IS DISTINCT FROM ({_columns("a.", OFFER_COLUMNS)})
             THEN now() ELSE o.updated_at END)
  FROM {MARKED}
 WHERE o.ctid = a.old_tid AND o.id IS NOT DISTINCT FROM a.old_id AND NOT a.rest
   AND (a.changed OR a.old_best IS DISTINCT FROM m.best
        OR (m.best AND a.old_reason IS DISTINCT FROM c.reason))
"""

# ... and the new ones, in config order, so that a config's offers share pages (its next
# list rewrites them together: fewer pages dirtied and logged). A new one has no row yet:
# the offers of the products in scope are read (o_old) under the locks of their buckets,
# and only a refresh, holding them, writes offers.
NEW_OFFERS_SQL = f"""
INSERT INTO pricing_offer (product_id, config_id, price_type, {_columns("", OFFER_COLUMNS)},
                           best, reason, updated_at)
SELECT a.product_id, a.config_id, a.price_type, {_columns("a.", OFFER_COLUMNS)}, m.best,
       {MARK_REASON}, now()
  FROM {MARKED}
 WHERE NOT a.rest AND a.old_id IS NULL
 ORDER BY a.config_id, a.product_id, a.price_type
"""

# The best of a rest row (ALL_SQL) that is the best no more, or for other reasons.
REST_MARKS_SQL = f"""
UPDATE pricing_offer o
   SET best = m.best, reason = {MARK_REASON}
  FROM {MARKED}
 WHERE a.rest AND a.old_best AND o.product_id = a.product_id
   AND o.config_id = a.config_id AND o.price_type = a.price_type
   AND (NOT m.best OR a.old_reason IS DISTINCT FROM c.reason)
"""

# Offers of products in scope (of the config refreshed, if one) that are no more.
GONE_OFFERS_SQL = """
DELETE FROM pricing_offer WHERE id IN (
    SELECT o.id FROM o_old o
     WHERE (%(config)s::bigint IS NULL OR o.config_id = %(config)s::bigint)
       AND NOT EXISTS (SELECT 1 FROM o_all a
                        WHERE a.product_id = o.product_id AND a.config_id = o.config_id
                          AND a.price_type = o.price_type))
"""

# The prices that differ, each found where KNOWN_SQL read it (o_prices.tid, and checked
# to be that product's): no index searched, no row locked first as INSERT ... ON
# CONFLICT does. published_at moves when the published price or availability does; an
# approval stays while the price approved does (the same computed price, published).
PRICE_SET = f"""
   SET ({_columns("", PRICE_COLUMNS)}, published_at, computed_at, approved_by_id) = (
       {_columns("n.", PRICE_COLUMNS)},
       CASE WHEN (n.price, n.available) IS DISTINCT FROM (p.price, p.available)
            THEN now() ELSE p.published_at END,
       now(),
       CASE WHEN (n.status, n.computed) = (p.status, p.computed) THEN p.approved_by_id END)
  FROM o_prices n"""
UPDATE_PRICES_SQL = f"""
UPDATE pricing_productprice p {PRICE_SET}
 WHERE p.ctid = n.tid AND p.product_id IS NOT DISTINCT FROM n.product_id AND n.differs
"""
# Only a refresh writes prices, under its buckets' locks, but an approval updates a held
# one in place (price_approve): a row it moved since KNOWN_SQL read it is not where it
# was, and is found by its key, if what it holds is not what the refresh made.
MOVED_PRICES_SQL = f"""
UPDATE pricing_productprice p {PRICE_SET}
 WHERE p.product_id = n.product_id AND n.differs AND n.existed
   AND ({_columns("p.", PRICE_COLUMNS)}) IS DISTINCT FROM ({_columns("n.", PRICE_COLUMNS)})
"""

# Of the prices computed: how many are held, and how many of those that stand differ.
REWRITES_SQL = """
SELECT count(*) FILTER (WHERE status = 'held'), count(*) FILTER (WHERE differs AND existed)
  FROM o_prices
"""

# ... and the new ones.
NEW_PRICES_SQL = f"""
INSERT INTO pricing_productprice (product_id, {_columns("", PRICE_COLUMNS)}, published_at,
                                  computed_at)
SELECT n.product_id, {_columns("n.", PRICE_COLUMNS)}, CASE WHEN n.published THEN now() END,
       now()
  FROM o_prices n
 WHERE n.differs AND NOT n.existed
"""

# The items of the events, one per product, as json text (an event's payload is made
# jsonb once, whole, by EVENTS_SQL: items made jsonb and aggregated as such took ~20 %
# longer): the products whose best offer moved (its supplier, price type, price or
# stock) ...
OFFER_ITEMS_SQL = """
CREATE TEMP TABLE o_offer_items ON COMMIT DROP AS
SELECT c.product_id,
       json_build_object(
           'product_id', c.product_id, 'own_code', c.own_code,
           'best', CASE WHEN c.config_id IS NOT NULL THEN json_build_object(
               'config_id', c.config_id, 'supplier', COALESCE(now_at.name, ''),
               'sku', c.sku, 'price_type', c.price_type, 'price', c.price::text,
               'currency', c.currency, 'price_rub', c.price_rub::text,
               'in_stock', c.in_stock, 'quantity', c.quantity::text) END,
           'before', CASE WHEN o.product_id IS NOT NULL THEN json_build_object(
               'config_id', o.config_id, 'supplier', COALESCE(was_at.name, ''),
               'price_type', o.price_type, 'price_rub', o.price_rub::text,
               'in_stock', o.in_stock) END) AS item
  FROM o_choice c
  LEFT JOIN (SELECT DISTINCT ON (product_id) product_id, config_id, price_type, price_rub,
                     in_stock
                FROM (SELECT id, product_id, config_id, price_type, price_rub, in_stock
                        FROM o_old WHERE best
                       UNION ALL
                      -- (the other configs' offers in o_all are as they stood)
                      SELECT old_id, product_id, config_id, price_type, price_rub, in_stock
                        FROM o_all WHERE old_best AND config_id <> %(config)s::bigint) b
               ORDER BY product_id, id) o
         ON o.product_id = c.product_id
  LEFT JOIN pricefeed_pricelistconfig now_at ON now_at.id = c.config_id
  LEFT JOIN pricefeed_pricelistconfig was_at ON was_at.id = o.config_id
 WHERE (o.config_id, o.price_type, o.price_rub, o.in_stock)
       IS DISTINCT FROM (c.config_id, c.price_type, c.price_rub, c.in_stock)
"""

# ... and those whose published price or availability changed.
PRICE_ITEMS_SQL = """
CREATE TEMP TABLE o_price_items ON COMMIT DROP AS
SELECT product_id,
       json_build_object('product_id', product_id, 'own_code', own_code,
                          'price', price::text, 'before', old_price::text,
                          'currency', 'RUB', 'available', available) AS item
  FROM o_prices
 WHERE (price, available) IS DISTINCT FROM (old_price, COALESCE(old_available, false))
"""

# The events of a table of items ({items}), EVENT_ITEMS products each, in product
# order: (number, payload as jsonb) for outbox.services.publish_select.
EVENTS_SQL = """
SELECT part, json_build_object('items', json_agg(item ORDER BY product_id))::jsonb
       AS payload
  FROM (SELECT product_id, item,
               (row_number() OVER (ORDER BY product_id) - 1) / %(per)s AS part
          FROM {items}) items
 GROUP BY part
"""


@dataclass
class Refreshed:
    """What a refresh did: products seen, offers written, best offers and published
    prices that changed, prices held (of those computed), prices settled (not computed
    again: CHOICE_SQL), products whose other configs' offers were read in a config's
    refresh (KNOWN_SQL: the others not), and seconds per stage."""

    products: int = 0
    offers: int = 0
    best_changed: int = 0
    published_changed: int = 0
    held: int = 0
    settled: int = 0
    others_read: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, other: Refreshed) -> None:
        self.products += other.products
        self.offers += other.offers
        self.best_changed += other.best_changed
        self.published_changed += other.published_changed
        self.held += other.held
        self.settled += other.settled
        self.others_read += other.others_read
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


def _scope(
    cursor: Any,
    product_ids: Iterable[int] | None,
    config_id: int | None,
    buckets: list[int],
) -> None:
    """The products in scope: those given, or (none given) those ``config_id``'s offers
    are or were for (CONFIG_PRODUCTS_SQL) in ``buckets``, found where they are."""
    _temp(cursor, "o_scope", "(product_id bigint PRIMARY KEY)")
    if product_ids is None:
        cursor.execute(
            f"INSERT INTO o_scope SELECT * FROM ({CONFIG_PRODUCTS_SQL}) c"
            f" WHERE {BUCKET} = ANY (%s) ORDER BY 1",
            [config_id, config_id, buckets],
        )
    else:
        with cursor.cursor.copy("COPY o_scope (product_id) FROM STDIN") as copy:
            for product_id in product_ids:
                copy.write_row((product_id,))
    cursor.execute("ANALYZE o_scope")


# The statements' own tables (dropped first: a second refresh within one outer
# transaction, as in tests, finds the first one's).
TEMP_TABLES = (
    "o_product", "o_old", "o_all", "o_known", "o_choice", "o_prices", "o_offer_items",
    "o_price_items",
)  # fmt: skip


def _rows(cursor: Any, sql: str) -> list[tuple]:
    cursor.execute(sql)
    return cursor.fetchall()


def _refresh_scope(
    product_ids: Iterable[int] | None,
    config_id: int | None = None,
    buckets: list[int] | None = None,
) -> Refreshed:
    """Offers and prices of ``product_ids`` (None: those of ``config_id``'s offers,
    CONFIG_PRODUCTS_SQL, in ``buckets``: all by default), in the caller's transaction:
    the offers of every supplier made again from the lists (or, with ``config_id``, that
    supplier's only: the others' stand as they were last made), then the best and our
    price, all in PostgreSQL over the set; only what changed is written, each row
    once."""
    buckets = list(range(LOCK_BUCKETS)) if buckets is None else sorted(buckets)
    done = Refreshed()
    clock = time.perf_counter()
    seconds = done.seconds
    with connection.cursor() as cursor:
        cursor.execute(LOCK_SQL, [buckets])
        cursor.execute("SET LOCAL jit = off")
        # Every statement here goes by key from the products in scope (a tenth of the
        # catalogue at most, usually far less): an index, never a scan of every offer,
        # link or line, even when the statistics of a table that just grew say otherwise.
        cursor.execute("SET LOCAL enable_seqscan = off")
        # The sorts and hashes over the scope's offers (a few hundred thousand rows at
        # most per part) in memory rather than in files.
        cursor.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
        cursor.execute(WAL_COMPRESSION_SQL)
        cursor.execute(TOAST_COMPRESSION_SQL)
        _scope(cursor, product_ids, config_id, buckets)
        for table in TEMP_TABLES:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        cursor.execute(OLD_SQL, {"config": config_id})
        cursor.execute(
            ALL_SQL,
            {
                "stale_days": STALE_DAYS,
                "window": settings.PRICEFEED_RATES_WINDOW_DAYS,
                "config": config_id,
            },
        )
        done.offers = cursor.rowcount
        seconds["offers"] = time.perf_counter() - clock
        clock = time.perf_counter()
        cursor.execute(PRODUCTS_SQL)
        done.products = cursor.rowcount
        _rule_tables(cursor)
        cursor.execute(KNOWN_SQL, {"config": config_id})
        if config_id is not None:
            cursor.execute(REST_SQL, {"config": config_id})
            cursor.execute(OTHERS_SQL, {"config": config_id})
            done.others_read = _rows(cursor, "SELECT count(*) FROM o_known WHERE NOT known")[0][0]
        # The row counts and a few common values are what the plans below need: a
        # sample of 3,000 rows, not the default 30,000 (that ANALYZE took a tenth of
        # the time of the choice and the prices).
        cursor.execute(f"SET LOCAL default_statistics_target = {STATISTICS_TARGET}")
        cursor.execute("ANALYZE o_all")
        cursor.execute("RESET default_statistics_target")
        seconds["read"] = time.perf_counter() - clock
        clock = time.perf_counter()
        cursor.execute(CHOICE_SQL, {"config": config_id})
        cursor.execute(PRICES_SQL)
        done.settled = done.products - cursor.rowcount
        seconds["decide"] = time.perf_counter() - clock
        clock = time.perf_counter()
        cursor.execute(UPDATE_OFFERS_SQL)
        cursor.execute(NEW_OFFERS_SQL)
        if config_id is not None:
            cursor.execute(REST_MARKS_SQL)
        cursor.execute(GONE_OFFERS_SQL, {"config": config_id})
        held, rewritten = _rows(cursor, REWRITES_SQL)[0]
        cursor.execute(UPDATE_PRICES_SQL)
        if cursor.rowcount < rewritten:
            cursor.execute(MOVED_PRICES_SQL)
        cursor.execute(NEW_PRICES_SQL)
        seconds["write"] = time.perf_counter() - clock
        clock = time.perf_counter()
        done.held = held
        cursor.execute(OFFER_ITEMS_SQL, {"config": config_id})
        done.best_changed = cursor.rowcount
        cursor.execute(PRICE_ITEMS_SQL)
        done.published_changed = cursor.rowcount
        _announce(done.best_changed, done.published_changed)
        seconds["events"] = time.perf_counter() - clock
    return done


def _rule_tables(cursor: Any) -> None:
    """The rules as the statements read them: per category of the products in scope its
    offer rule and the price rules that cover it, per brand the price rules it passes
    (categories and brands compared as rules.in_category and casefold do), and the price
    rules in order. Rules are few; categories and brands are far fewer than products."""
    offer_rules = _offer_rules()
    price_rules = _price_rules()
    _temp(
        cursor,
        "o_category",
        "(category text PRIMARY KEY, strategy text, rule_category text, price_type text,"
        " price_rules bigint[])",
    )
    categories = []
    for (category,) in _rows(cursor, "SELECT DISTINCT category FROM o_product"):
        rule = rules.offer_rule_for(category, offer_rules)
        covering = [r.id for r in price_rules if rules.in_category(category, r.category)]
        categories.append((category, rule.strategy, rule.category, rule.price_type, covering))
    cursor.executemany("INSERT INTO o_category VALUES (%s, %s, %s, %s, %s)", categories)
    _temp(cursor, "o_brand", "(brand text PRIMARY KEY, price_rules bigint[])")
    brands = []
    for (brand,) in _rows(cursor, "SELECT DISTINCT brand FROM o_product"):
        folded = brand.casefold().strip()
        brands.append((brand, [r.id for r in price_rules if not r.brand or r.brand == folded]))
    cursor.executemany("INSERT INTO o_brand VALUES (%s, %s)", brands)
    # (Keyed by their order: the first rule that applies to a price is found walking
    # them in order, not by sorting them for each price.)
    _temp(
        cursor,
        "o_rule",
        "(id bigint, ordinal int, name text, config_id bigint, cost_from numeric,"
        " cost_below numeric, markup_percent numeric, fixed_add numeric, rounding text,"
        " min_margin_percent numeric, respect_rrp boolean, rrp_type text,"
        " hold_percent numeric, PRIMARY KEY (ordinal))",
    )
    cursor.executemany(
        "INSERT INTO o_rule VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [
            (
                r.id,
                ordinal,
                r.name,
                r.config_id,
                r.cost_from,
                r.cost_below,
                r.markup_percent,
                r.fixed_add,
                r.rounding,
                r.min_margin_percent,
                r.respect_rrp,
                r.rrp_type,
                r.hold_percent,
            )
            for ordinal, r in enumerate(price_rules)
        ],
    )
    cursor.execute("ANALYZE o_category")
    cursor.execute("ANALYZE o_brand")


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


def _announce(offer_items: int, price_items: int) -> None:
    """The events of the changes (o_offer_items, o_price_items: this many items each),
    built and written by PostgreSQL, and a new published version when a price changed.
    The version is raised last: its row stays locked until the transaction commits, and
    a refresh side by side that changed prices too waits for it (so the versions'
    order is the commits'); only writing the built events waits with it."""
    if offer_items:
        publish_select(
            OFFER_CHANGED,
            PublishedVersion(pk=1),
            EVENTS_SQL.format(items="o_offer_items"),
            {"per": EVENT_ITEMS},
            most=-(-offer_items // EVENT_ITEMS),
        )
    if not price_items:
        return
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS o_price_events")
        cursor.execute(
            "CREATE TEMP TABLE o_price_events ON COMMIT DROP AS"
            + EVENTS_SQL.format(items="o_price_items"),
            {"per": EVENT_ITEMS},
        )
    version = version_raise()
    publish_select(
        PRICE_CHANGED,
        version,
        "SELECT part, payload || jsonb_build_object('version', %(version)s::bigint)"
        " FROM o_price_events",
        {"version": version.number},
        most=-(-price_items // EVENT_ITEMS),
    )


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


# The products a config's offers are or were for: its offering links' products and
# those it has offers for (a link that went).
CONFIG_PRODUCTS_SQL = """
SELECT product_id FROM products_supplierlink
 WHERE config_id = %s AND state IN ('auto', 'confirmed')
 UNION SELECT product_id FROM pricing_offer WHERE config_id = %s
"""


def config_offers_refresh(config_id: int, parts: int | None = None) -> Refreshed:
    """After a config's list was accepted and matched: its products' offers and prices,
    as ``parts`` (default PRICEFEED_OFFERS_PARTS) transactions side by side, or in the
    caller's transaction if there is one. The seconds per stage are the parts' summed."""
    parts = settings.PRICEFEED_OFFERS_PARTS if parts is None else parts
    parts = max(1, min(parts, LOCK_BUCKETS))
    if parts == 1 or connection.in_atomic_block:
        with transaction.atomic(), gc_paused():
            done = _refresh_scope(None, config_id)
    else:
        done = Refreshed()
        with gc_paused():
            for part in side_by_side(
                lambda share: _refresh_scope(None, config_id, share), LOCK_BUCKETS, parts, "offers"
            ):
                done.add(part)
    _logged(f"config {config_id}", done)
    return done


def _priced(within: str, params: dict[str, Any]) -> list[int]:
    """The products with a link that offers, an offer or a price, of those ``within``
    (a condition on product_id) selects, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT product_id FROM products_supplierlink"
            f" WHERE state IN ('auto', 'confirmed') AND {within}"
            f" UNION SELECT product_id FROM pricing_offer WHERE {within}"
            f" UNION SELECT product_id FROM pricing_productprice WHERE {within}",
            params,
        )
        return sorted(row[0] for row in cursor.fetchall())


def priced(product_ids: Iterable[int]) -> list[int]:
    """Those of ``product_ids`` with a link that offers, an offer or a price (what a
    refresh has something to compute or to take away for), in order."""
    return _priced("product_id = ANY (%(ids)s::bigint[])", {"ids": sorted(set(product_ids))})


def _everything(first: int = 0, last: int = 2**63 - 1) -> list[int]:
    """Every product with a link that offers, an offer or a price (from ``first`` to
    ``last``), in order."""
    return _priced("product_id BETWEEN %(first)s AND %(last)s", {"first": first, "last": last})


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
        " published_changed=%s held=%s settled=%s others_read=%s seconds=%s",
        scope,
        done.products,
        done.offers,
        done.best_changed,
        done.published_changed,
        done.held,
        done.settled,
        done.others_read,
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
