"""The SQL of the price domain that the ORM cannot say, by name, one purpose each.

An import's items are a range of the items table's primary key (models.item_key), in
row order: ``id >= %s AND id < %s`` with the keys of (import, 0) and (import + 1, 0).
"""

from __future__ import annotations

from .models import PriceItem

ITEMS = PriceItem._meta.db_table
_OF_IMPORT = "id >= %s AND id < %s"

# The item columns COPY writes, in the order the COPY text gives them.
COPY_ITEM_COLUMNS = "id, price_import_id, row_number, sku, name, price, currency, quantity"

# Streams an import's rows into the items table (COPY text format).
COPY_ITEMS = f"COPY {ITEMS} ({COPY_ITEM_COLUMNS}) FROM STDIN"

# An import's (sku, price) rows as stored: for an import no SKU of which repeats.
ITEMS_AS_STORED = f"SELECT sku, price FROM {ITEMS} WHERE {_OF_IMPORT}"

# An import's last row per SKU (PostgreSQL): "C" collation, because byte order is all
# DISTINCT ON needs and it sorts several times faster than a linguistic collation.
ITEMS_LAST_PER_SKU_PG = (
    f'SELECT DISTINCT ON (sku COLLATE "C") sku, price FROM {ITEMS} '
    f'WHERE {_OF_IMPORT} ORDER BY sku COLLATE "C", id DESC'
)

# An import's last row per SKU (any database).
ITEMS_LAST_PER_SKU = (
    f"SELECT sku, price FROM {ITEMS} WHERE id IN "
    f"(SELECT MAX(id) FROM {ITEMS} WHERE {_OF_IMPORT} GROUP BY sku)"
)

# The diff of two imports' items, n (new) and o (old), each one of the ITEMS_* queries
# above: d holds one row per difference ("added", "removed" unless delta mode, or
# "changed"); the result is the count of each kind (sku NULL) followed by the first
# ``sample`` SKUs of each kind with their old and new prices. Parameters: the key range
# of the new import, that of the old one, whether a missing SKU counts as removed.
DIFF = """
    WITH n AS ({new}), o AS ({old}),
    d AS (
        SELECT CASE WHEN o.sku IS NULL THEN 'added' WHEN n.sku IS NULL THEN 'removed'
               ELSE 'changed' END AS kind,
               COALESCE(n.sku, o.sku) AS sku, o.price AS old, n.price AS new
        FROM n FULL JOIN o ON o.sku = n.sku
        WHERE o.sku IS NULL OR (n.sku IS NULL AND %s)
           OR (n.sku IS NOT NULL AND o.sku IS NOT NULL
               AND (n.price <> o.price OR (n.price IS NULL) <> (o.price IS NULL)))
    )
    SELECT kind, COUNT(*), NULL, NULL, NULL FROM d GROUP BY kind
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM d
                             WHERE kind = 'added' LIMIT {sample}) a
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM d
                             WHERE kind = 'removed' LIMIT {sample}) r
    UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM d
                             WHERE kind = 'changed' LIMIT {sample}) c
"""

# For the diff's transaction (PostgreSQL): two imports of a million rows hash in ~100 MB,
# and at the default 4 MB the join and sorts spill to disk in batches.
DIFF_WORK_MEM = "SET LOCAL work_mem = '256MB'"

# For the diff's transaction (PostgreSQL): the rows COPYed in it have no statistics yet,
# and the planner then picked a merge join that sorts both imports by SKU in the
# database's collation (2.7 s for 1M x 1M against 1.7 s hashed).
DIFF_NO_MERGE_JOIN = "SET LOCAL enable_mergejoin = off"
