"""The SQL of the price domain that the ORM cannot say, by name, one purpose each.

An import's items are a range of the items table's primary key (models.item_key), in
row order: ``id >= %s AND id < %s`` with the keys of (import, 0) and (import + 1, 0).
"""

from __future__ import annotations

from .models import CatalogueEntry, PriceItem, PriceListConfig

ITEMS = PriceItem._meta.db_table
_OF_IMPORT = "id >= %s AND id < %s"

# The item columns COPY writes, in the order the COPY text gives them.
COPY_ITEM_COLUMNS = (
    "id, price_import_id, row_number, sku, name, price, currency, quantity, config_id, valid_from"
)

# Streams an import's rows into the items table (COPY text format).
COPY_ITEMS = f"COPY {ITEMS} ({COPY_ITEM_COLUMNS}) FROM STDIN"

# The same with the extra values of the lines (pricefeed.parsing.ExtraColumns, in
# EXTRA_VALUES' order) before config_id and valid_from: for a list that has some. A list
# without them is COPYed without these columns, which take their defaults.
COPY_RICH_ITEM_COLUMNS = (
    "id, price_import_id, row_number, sku, name, price, currency, quantity, brand, article, "
    "barcodes, barcodes_invalid, unit, pack, min_order, category, stock_text, stock_kind, "
    "prices, stocks, config_id, valid_from"
)
COPY_RICH_ITEMS = f"COPY {ITEMS} ({COPY_RICH_ITEM_COLUMNS}) FROM STDIN"

# A config's current entries (pricefeed.catalogue: items that became current and were
# not ended since), the condition of the items table's current-entry index.
_CURRENT = "config_id = %s AND valid_from IS NOT NULL AND valid_to IS NULL"


# The planner's settings for a join of an import's rows with a catalogue (COMPARE, and
# the diff export's DIFF_ROWS), PostgreSQL, for that statement only (catalogue.planner).
# work_mem: two sets of a million rows hash in ~100 MB, and at the default 4 MB the join
# and sorts spill to disk in batches. enable_mergejoin: the rows COPYed in the
# transaction have no statistics yet, and the planner then picked a merge join that
# sorts both sides by SKU in the database's collation (2.7 s for 1M x 1M against 1.7 s
# hashed).
JOIN_PLANNER = {"work_mem": "256MB", "enable_mergejoin": "off"}

# -- exports (pricefeed.exports) ----------------------------------------------------------

# A config's catalogue as it stood at a moment, for the diff export: the o of COMPARE,
# as it was when an import was compared with it. Parameters: the config, the moment
# twice.
EXPORT_CATALOGUE_AS_OF = (
    f"SELECT sku, name, price, currency FROM {CatalogueEntry._meta.db_table} "
    "WHERE config_id = %s AND valid_from <= %s AND (valid_to IS NULL OR valid_to > %s)"
)

# No catalogue yet (a config's first import), for the diff export.
EXPORT_NO_CATALOGUE = (
    f"SELECT sku, name, price, currency FROM {CatalogueEntry._meta.db_table} WHERE 1 = 0"
)

# Every difference the diff counts (COMPARE's, but the "amended"), one row each: kind
# ("added", "unreadable", "removed", "changed"), sku, name, old price, new price,
# currency. n is one of the ENTRY_ROWS_* queries, o EXPORT_CATALOGUE_AS_OF or
# EXPORT_NO_CATALOGUE, k catalogue.kept_skus'. Added first,
# then unreadable, removed and changed; added and changed in the file's row order
# (the key order), the others by SKU. Parameters: those of n, o and k, whether a
# missing SKU counts as removed.
DIFF_ROWS = """
    WITH n AS ({new}), o AS ({old}), k AS ({kept})
    SELECT CASE WHEN o.sku IS NULL THEN 'added'
                WHEN n.sku IS NULL AND o.sku IN (SELECT * FROM k) THEN 'unreadable'
                WHEN n.sku IS NULL THEN 'removed'
                ELSE 'changed' END AS kind,
           COALESCE(n.sku, o.sku), COALESCE(n.name, o.name), o.price, n.price,
           COALESCE(n.currency, o.currency)
    FROM n FULL JOIN o ON o.sku = n.sku
    WHERE o.sku IS NULL OR (n.sku IS NULL AND %s)
       OR (n.sku IS NOT NULL AND o.sku IS NOT NULL
           AND (n.price <> o.price OR (n.price IS NULL) <> (o.price IS NULL)))
    ORDER BY CASE WHEN o.sku IS NULL THEN 0 WHEN n.sku IS NOT NULL THEN 3
                  WHEN o.sku IN (SELECT * FROM k) THEN 1 ELSE 2 END,
             n.id, o.sku
"""


# -- the catalogue (pricefeed.catalogue) --------------------------------------------------

# The extra columns of a line (pricefeed.parsing.EXTRA_VALUES): a change of any of them
# alone "amends" an entry (COMPARE).
EXTRA_COLUMNS = (
    "brand, article, barcodes, barcodes_invalid, unit, pack, min_order, category, "
    "stock_text, stock_kind, prices, stocks"
)
_EXTRAS_OF = {
    side: "(" + ", ".join(f"{side}.{c.strip()}" for c in EXTRA_COLUMNS.split(",")) + ")"
    for side in ("n", "o")
}
_ENTRY_COLUMNS = f"id, sku, name, price, currency, quantity, {EXTRA_COLUMNS}"

# An import's rows with the columns the catalogue compares: as stored (no SKU repeats),
# or its last row per SKU, as ITEMS_* above.
# Parameters: the key range of the import.
ENTRY_ROWS_AS_STORED = f"SELECT {_ENTRY_COLUMNS} FROM {ITEMS} WHERE {_OF_IMPORT}"
ENTRY_ROWS_LAST_PER_SKU = (
    f'SELECT DISTINCT ON (sku COLLATE "C") {_ENTRY_COLUMNS} FROM {ITEMS} '
    f'WHERE {_OF_IMPORT} ORDER BY sku COLLATE "C", id DESC'
)

# Imports of one config take turns at its catalogue; the moment after the lock is
# granted is when it changes (database time). NO KEY UPDATE: an import of the config
# being recorded meanwhile (its foreign key's KEY SHARE lock) does not wait for it.
CONFIG_LOCK = f"SELECT 1 FROM {PriceListConfig._meta.db_table} WHERE id = %s FOR NO KEY UPDATE"
CLOCK = "SELECT clock_timestamp()"

# Whether the config has a current entry. Parameter: the config.
CATALOGUE_ANY = f"SELECT EXISTS (SELECT 1 FROM {ITEMS} WHERE {_CURRENT})"

# Every difference between an import's rows (n: its last row per SKU, as ENTRY_ROWS_*)
# and its config's current catalogue (o), in a temporary table, one row each: the SKU,
# the item ids on either side, the old and new price, and its kind: "added"; "removed"
# (a snapshot's: only when a missing SKU counts as removed), or "unreadable" when the
# SKU is one of k, the SKUs of the import's unreadable rows; "changed" (the price);
# "amended" (the same price, another name, currency or quantity). One hash full join
# of the two; the diff's counts, the entries to end and the rows to make current are
# then read from the few rows it keeps. Parameters: those of n, o and k, whether a
# missing SKU counts as removed.
COMPARED = "pricefeed_compared"
COMPARE = f"""
    CREATE TEMPORARY TABLE {COMPARED} ON COMMIT DROP AS
    WITH n AS ({{new}}), o AS ({{old}}), k AS ({{kept}})
    SELECT n.id AS new_id, o.id AS old_id, COALESCE(n.sku, o.sku) AS sku,
           o.price AS old, n.price AS new, o.prices AS old_prices, n.prices AS new_prices,
           CASE WHEN o.sku IS NULL THEN 'added'
                WHEN n.sku IS NULL AND o.sku IN (SELECT * FROM k) THEN 'unreadable'
                WHEN n.sku IS NULL THEN 'removed'
                WHEN n.price <> o.price OR (n.price IS NULL) <> (o.price IS NULL)
                    THEN 'changed'
                ELSE 'amended' END AS kind
    FROM n FULL JOIN o ON o.sku = n.sku
    WHERE o.sku IS NULL OR (n.sku IS NULL AND %s)
       OR (n.sku IS NOT NULL AND o.sku IS NOT NULL
           AND (n.price IS DISTINCT FROM o.price OR n.name IS DISTINCT FROM o.name
                OR n.currency IS DISTINCT FROM o.currency
                OR n.quantity IS DISTINCT FROM o.quantity
                OR {_EXTRAS_OF["n"]} IS DISTINCT FROM {_EXTRAS_OF["o"]}))
"""
COMPARED_DROP = f"DROP TABLE IF EXISTS {COMPARED}"

# A config's current entries with the columns COMPARE reads, its o. Parameter: the
# config.
CATALOGUE_CURRENT = f"SELECT {_ENTRY_COLUMNS} FROM {ITEMS} WHERE {_CURRENT}"

# The diff's figures from COMPARE's table: the count of each kind, and a "jump" for
# each change of more than the config's share, followed by the first ``sample`` SKUs of
# each kind (by SKU) with their old and new prices. Parameter: the jump share in
# percent.
DIFF = f"""
    WITH d AS (SELECT kind, sku, old, new FROM {COMPARED} WHERE kind <> 'amended'),
    e AS (
        SELECT kind, sku, old, new FROM d
        UNION ALL
        SELECT 'jump', sku, old, new FROM d
        WHERE kind = 'changed' AND (old = 0 OR ABS(new - old) * 100 > ABS(old) * %s)
    )
    SELECT kind, COUNT(*), NULL, NULL, NULL FROM e GROUP BY kind
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM e
                             WHERE kind = 'added' ORDER BY sku LIMIT {{sample}}) a
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM e
                             WHERE kind = 'removed' ORDER BY sku LIMIT {{sample}}) r
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM e
                             WHERE kind = 'changed' ORDER BY sku LIMIT {{sample}}) c
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM e
                             WHERE kind = 'jump' ORDER BY sku LIMIT {{sample}}) j
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM e
                             WHERE kind = 'unreadable' ORDER BY sku LIMIT {{sample}}) u
"""

# The diff per price type besides the main price (PriceItem.prices) from COMPARE's
# table: every SKU on both sides whose price of a type changed (appeared, went, or
# another value), with whether it jumped by more than the config's share; then a row
# per type with its counts (changed, jumps, and went: the SKUs that lost the type). The
# first ``sample`` SKUs of each type (by SKU), and of its jumps, are kept. Parameter: the
# jump share in percent.
DIFF_PRICE_TYPES = f"""
    WITH t AS (
        SELECT c.sku, k.code,
               (c.old_prices -> k.code ->> 'price')::numeric AS old,
               (c.new_prices -> k.code ->> 'price')::numeric AS new
        FROM {COMPARED} c
        CROSS JOIN LATERAL (SELECT jsonb_object_keys(c.old_prices)
                            UNION SELECT jsonb_object_keys(c.new_prices)) AS k(code)
        WHERE c.kind IN ('changed', 'amended')
          AND (c.old_prices <> '{{{{}}}}'::jsonb OR c.new_prices <> '{{{{}}}}'::jsonb)
    ),
    d AS (
        SELECT code, sku, old, new,
               old IS NOT NULL AND new IS NOT NULL
               AND (old = 0 OR ABS(new - old) * 100 > ABS(old) * %s) AS jump
        FROM t WHERE old IS DISTINCT FROM new
    ),
    r AS (
        SELECT d.*, row_number() OVER (PARTITION BY code ORDER BY sku) AS n,
               row_number() OVER (PARTITION BY code, jump ORDER BY sku) AS nj
        FROM d
    )
    SELECT code, sku, old, new, jump, 0, 0, 0 FROM r
    WHERE n <= {{sample}} OR (jump AND nj <= {{sample}})
    UNION ALL
    SELECT code, NULL, NULL, NULL, NULL, COUNT(*), COUNT(*) FILTER (WHERE jump),
           COUNT(*) FILTER (WHERE old IS NOT NULL AND new IS NULL)
    FROM d GROUP BY code
"""

# The current entries the import changes or removes (COMPARE's): ended. Parameters:
# the moment, the import.
CATALOGUE_END = f"""
    UPDATE {ITEMS} SET valid_to = %s, ended_by_id = %s
    WHERE id IN (SELECT old_id FROM {COMPARED}
                 WHERE old_id IS NOT NULL AND kind <> 'unreadable')
"""

# The import's rows that add or change a SKU (COMPARE's): made current, after the
# entries they replace are ended. Parameter: the moment.
CATALOGUE_ADD = f"""
    UPDATE {ITEMS} SET valid_from = %s
    WHERE id IN (SELECT new_id FROM {COMPARED} WHERE new_id IS NOT NULL)
"""

# Into an empty catalogue: every row of the import that counts (ENTRY_ROWS_*) made
# current. Parameters: the moment, the key range twice.
CATALOGUE_ADD_ALL = f"""
    UPDATE {ITEMS} SET valid_from = %s
    WHERE {_OF_IMPORT} AND id IN (SELECT n.id FROM ({{new}}) AS n)
"""

# A first list stored current (ItemWriter): the SKUs it listed more than once are
# current in their first row; their last one is made so instead, as in every other
# import. Parameters: the key range and the SKUs, twice, then the moment.
FIRST_LIST_REPEATS = f"""
    UPDATE {ITEMS} SET valid_from = NULL
    WHERE {_OF_IMPORT} AND valid_from IS NOT NULL AND sku = ANY(%s)
"""
FIRST_LIST_LAST_ROWS = f"""
    UPDATE {ITEMS} SET valid_from = %s
    WHERE id IN (SELECT DISTINCT ON (sku COLLATE "C") id FROM {ITEMS}
                 WHERE {_OF_IMPORT} AND sku = ANY(%s) ORDER BY sku COLLATE "C", id DESC)
"""

# An import deleted: the entries it ended forget it (PriceItem.ended_by has no database
# foreign key). Parameters: the config, the import.
FORGET_ENDED_BY = (
    f"UPDATE {ITEMS} SET ended_by_id = NULL "
    "WHERE config_id = %s AND valid_to IS NOT NULL AND ended_by_id = %s"
)
