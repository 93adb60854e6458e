"""The matching keys of our products (ProductKey, MatchToken), refreshed set-based.

``keys_refresh`` finds the products whose key is missing or older than the product
(``Product.updated_at``) and the retired ones that still have one, and rewrites just
those: the keys are computed in Python (products.normalize) and COPYed into temporary
tables, then the keys upserted with one statement, those products' old tokens deleted
with one join and the new ones inserted with one statement (MatchToken's indexes
dropped and built again after when most products are rewritten). A product's tokens
are what the matching finds it by: ``b:<barcode>``, ``a:<article key>``,
``w:<name word>`` (the decisive attributes among the words, ``w:size:m8x40``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

from django.db import connection, transaction

from . import normalize
from .indexes import indexes_dropped

T = TypeVar("T")

# Words on a line that do not say what it is (уп. → упаковка).
NOISE_WORDS = frozenset({"упаков", "коробк", "new", "новинк", "хит", "акция"})
# Products read and keyed per round trip.
CHUNK = 20_000
# When at least this share of the products is rewritten (the first refresh, a reload of
# the catalogue), the tokens' indexes are dropped and made again after: building an index
# once is several times faster than updating it row by row.
REBUILD_SHARE = 0.5
# Below this many products the indexes are cheap to update: never dropped.
REBUILD_FLOOR = 200_000

_STALE = """
SELECT p.id, p.name, p.brand, p.article, p.barcodes, p.updated_at
  FROM products_product p LEFT JOIN products_productkey k ON k.product_id = p.id
 WHERE p.retired_at IS NULL AND (k.product_id IS NULL OR k.made_from <> p.updated_at)
"""
# The tokens of the retired products whose key is dropped, taken off their counts.
_UNCOUNT_RETIRED = """
INSERT INTO m_token_delta
SELECT token, -count(*) FROM products_matchtoken WHERE product_id = ANY(%s) GROUP BY token
"""
_DROP_RETIRED = """
DELETE FROM products_productkey k USING products_product p
 WHERE p.id = k.product_id AND p.retired_at IS NOT NULL
RETURNING k.product_id
"""


# A brand's words and its key, by each of its words.
BrandIndex = dict[str, list[tuple[frozenset[str], str]]]


class Key(NamedTuple):
    """What a product or a line is compared by (a tuple: a million are made per load)."""

    product_id: int
    article_key: str
    brand_key: str
    name_key: str
    attributes: dict[str, str]
    # The name's words as compared (name_key's, as a set).
    words: frozenset[str]
    tokens: frozenset[str]


def line_tokens(words: Iterable[str], article_key: str, barcodes: Iterable[str]) -> frozenset[str]:
    """The tokens a product or a line is found by."""
    tokens = {"w:" + word for word in words}
    tokens.update(code_tokens(article_key, barcodes))
    return frozenset(tokens)


def code_tokens(article_key: str, barcodes: Iterable[str]) -> list[str]:
    """The tokens of a product's or a line's codes: its article's and its barcodes'."""
    tokens = ["a:" + article_key] if article_key else []
    tokens.extend(["b:" + barcode for barcode in dict.fromkeys(barcodes) if barcode])
    return tokens


@functools.lru_cache(maxsize=10_000)
def brand_words(brand: str) -> frozenset[str]:
    """The words a brand is written with in a name (``Tech-Krep`` → tech, krep)."""
    return frozenset(normalize.parse_name(brand).words) if brand else frozenset()


def product_key(
    product_id: int,
    name: str,
    brand: str,
    article: str,
    barcodes: Iterable[str],
    brands: BrandIndex | None = None,
) -> Key:
    """The key of a product (or of a supplier line). The brand's words are not words
    of the name; a line with no brand given whose name has every word of a known brand
    (``brands``, known_brands) has that brand."""
    article_key, brand_key, name_key, attributes, words = compared(name, brand, article, brands)
    return Key(
        product_id,
        article_key,
        brand_key,
        name_key,
        attributes,
        words,
        line_tokens(words, article_key, barcodes or ()),
    )


def compared(
    name: str, brand: str, article: str, brands: BrandIndex | None = None
) -> tuple[str, str, str, dict[str, str], frozenset[str]]:
    """A product's or a line's article key, brand key, name key, decisive attributes
    and words, as the matching compares them (product_key's)."""
    parsed = normalize.parse_name(name)
    words, brand_key = _words_and_brand(parsed.words, brand, brands)
    article_key = normalize.article_key(article) if article else ""
    return article_key, brand_key, " ".join(sorted(words)), parsed.attributes, words


def _words_and_brand(
    words: Iterable[str], brand: str, brands: BrandIndex | None = None
) -> tuple[frozenset[str], str]:
    """A name's words as compared (noise and the brand's own words left out) and the
    brand's key: the one given, or for a line with none, the known brand (``brands``)
    every word of which the name has (the longest, then the greatest key, then the
    words)."""
    kept = set(words)
    kept -= NOISE_WORDS
    brand_key = _brand_key(brand) if brand else ""
    if brand_key:
        kept -= brand_words(brand)
    elif brands:
        found = [b for w in brands.keys() & kept for b in brands[w] if b[0] <= kept]
        if found:
            known, brand_key = max(found, key=lambda b: (len(b[0]), b[1], sorted(b[0])))
            kept -= known
    return frozenset(kept), brand_key


@functools.lru_cache(maxsize=10_000)
def _brand_key(brand: str) -> str:
    return normalize.brand_key(brand)


def known_brands() -> BrandIndex:
    """The brands of our active products, as (words, brand key) by each of their words;
    read again only when the catalogue's version moved on since."""
    return per_catalogue("known_brands", _read_brands)


def _read_brands() -> BrandIndex:
    with connection.cursor() as cursor:
        # Those keys_refresh kept, when the keys are current; else as they are now.
        cursor.execute(_KNOWN_BRANDS if _current(_versions()) else _BRANDS_NOW)
        brands = {brand_words(b): normalize.brand_key(b) for (b,) in cursor.fetchall()}
    index: BrandIndex = {}
    for known, key in brands.items():
        for word in known:
            index.setdefault(word, []).append((known, key))
    return index


def _stale_rows() -> Iterator[list[tuple]]:
    # A named (server-side) cursor: a million products are read a chunk at a time.
    with connection.chunked_cursor() as cursor:
        cursor.execute(_STALE)
        while rows := cursor.fetchmany(CHUNK):
            yield rows


def keyed_total() -> int:
    """How many products have keys: as keys_refresh counted them, when the keys are
    current; else counted now."""
    versions = _versions()
    if _current(versions) and "keyed" in versions:
        return versions["keyed"]
    with connection.cursor() as cursor:
        cursor.execute(_KEYED_NOW)
        return cursor.fetchone()[0]


def _current(versions: dict[str, int]) -> bool:
    """Whether no product was written since the keys were refreshed."""
    version = versions.get("catalogue")
    return version is not None and version == versions.get("keys")


def catalogue_version() -> int | None:
    """The catalogue's version (MatchVersion): moved on by every statement that writes
    products; None when unknown (the table emptied)."""
    return _versions().get("catalogue")


def _versions() -> dict[str, int]:
    """MatchVersion's values by name ("catalogue", "keys", "keyed"), read at once."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, value FROM products_matchversion")
        return dict(cursor.fetchall())


# Values computed from the whole catalogue, each with the version it was computed at.
_per_catalogue: dict[str, tuple[int, Any]] = {}


def per_catalogue(name: str, compute: Callable[[], T]) -> T:
    """``compute()``, computed again only when the catalogue's version moved on since
    the last time in this process (any write of products moves it)."""
    version = catalogue_version()
    if version is not None:
        known = _per_catalogue.get(name)
        if known is not None and known[0] == version:
            return known[1]
    value = compute()
    if version is not None:
        _per_catalogue[name] = (version, value)
    return value


_BRANDS_NOW = "SELECT DISTINCT brand FROM products_product WHERE retired_at IS NULL AND brand <> ''"
_KNOWN_BRANDS = "SELECT brand FROM products_knownbrand"
_KEEP_BRANDS = f"DELETE FROM products_knownbrand; INSERT INTO products_knownbrand {_BRANDS_NOW}"
_KEYED_NOW = "SELECT count(*) FROM products_productkey"
_KEEP_KEYED = (
    f"INSERT INTO products_matchversion (name, value) SELECT 'keyed', ({_KEYED_NOW})"
    " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)


def keys_refresh() -> int:
    """Brings every product's key up to date; returns how many were rewritten or
    dropped. In one transaction, one refresh at a time (a second waits and then finds
    nothing to do). When no statement wrote products since the last refresh (the
    catalogue's version is the one the keys were made at), nothing is looked at."""
    changed = 0
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('products.keys'))")
            # Read before looking: a write committed from here on moves it on again,
            # and the next refresh looks.
            versions = _versions()
            if _current(versions):
                return 0
            version = versions.get("catalogue")
            cursor.execute(
                "CREATE TEMP TABLE IF NOT EXISTS m_keys (LIKE products_productkey) ON COMMIT DROP"
            )
            cursor.execute(
                "CREATE TEMP TABLE IF NOT EXISTS m_tokens (token text, product_id bigint) "
                "ON COMMIT DROP"
            )
            cursor.execute(
                "CREATE TEMP TABLE IF NOT EXISTS m_token_delta (token text, products int) "
                "ON COMMIT DROP"
            )
            cursor.execute(_DROP_RETIRED)
            retired = [row[0] for row in cursor.fetchall()]
            if retired:
                cursor.execute(_UNCOUNT_RETIRED, [retired])
                cursor.execute(
                    "DELETE FROM products_matchtoken WHERE product_id = ANY(%s)", [retired]
                )
            changed += len(retired)
            indexes = (
                indexes_dropped(cursor, "products_matchtoken", constraints="p")
                if _mostly_stale(cursor)
                else []
            )
        for rows in _stale_rows():
            changed += len(rows)
            _copy_keys(rows)
        if changed:
            _swap_in()  # also when only retired products' keys were dropped: counts
        if indexes:
            with connection.cursor() as cursor:
                for statement in indexes:
                    cursor.execute(statement)
        if version is not None:
            with connection.cursor() as cursor:
                # What the matching reads of the whole catalogue, kept with the keys (a
                # product deleted, its key with it, changes them without a key to redo).
                cursor.execute(_KEEP_BRANDS)
                cursor.execute(_KEEP_KEYED)
                cursor.execute(
                    "INSERT INTO products_matchversion (name, value) VALUES ('keys', %s) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    [version],
                )
    return changed


def _mostly_stale(cursor) -> bool:
    """Whether most active products have no key or a stale one (counted up to the
    point that decides it, from the table statistics' estimate of the products)."""
    cursor.execute(
        "SELECT reltuples::bigint FROM pg_class WHERE oid = 'products_product'::regclass"
    )
    estimate = max(cursor.fetchone()[0], 0)
    if estimate < REBUILD_FLOOR:
        return False
    cursor.execute(f"SELECT count(*) FROM ({_STALE} LIMIT %s) s", [int(estimate * REBUILD_SHARE)])
    return cursor.fetchone()[0] >= int(estimate * REBUILD_SHARE)


def _copy_keys(rows: list[tuple]) -> None:
    """The keys and tokens of a chunk of products COPYed aside (m_keys, m_tokens)."""
    with connection.cursor() as cursor:
        raw = cursor.cursor
        keys = []
        with raw.copy("COPY m_keys FROM STDIN") as copy:
            for product_id, name, brand, article, barcodes, updated_at in rows:
                key = product_key(product_id, name, brand, article, barcodes)
                keys.append(key)
                copy.write_row(
                    (
                        product_id,
                        key.article_key[:255],
                        key.brand_key[:255],
                        key.name_key,
                        json.dumps(key.attributes, ensure_ascii=False),
                        updated_at,
                    )
                )
        with raw.copy("COPY m_tokens (token, product_id) FROM STDIN") as copy:
            for key in keys:
                for token in key.tokens:
                    copy.write_row((token, key.product_id))


def _swap_in() -> None:
    """The keys and tokens made (m_keys, m_tokens) in place of those products' old ones:
    their old tokens deleted with one join, the new ones inserted with one statement."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE m_keys")
        cursor.execute(
            """
            WITH gone AS (
              DELETE FROM products_matchtoken t USING m_keys k
               WHERE t.product_id = k.product_id RETURNING t.token)
            INSERT INTO m_token_delta SELECT token, -count(*) FROM gone GROUP BY token
            """
        )
        cursor.execute(
            "INSERT INTO products_matchtoken (token, product_id) "
            "SELECT token, product_id FROM m_tokens"
        )
        cursor.execute(
            "INSERT INTO m_token_delta SELECT token, count(*) FROM m_tokens GROUP BY token"
        )
        cursor.execute(
            """
            INSERT INTO products_productkey
            SELECT * FROM m_keys
            ON CONFLICT (product_id) DO UPDATE SET
              article_key = excluded.article_key, brand_key = excluded.brand_key,
              name_key = excluded.name_key, attributes = excluded.attributes,
              made_from = excluded.made_from
            """
        )
        cursor.execute("TRUNCATE m_keys, m_tokens")
    _count_tokens()


def _count_tokens() -> None:
    """The token counts moved by what the refresh took off and put in (m_token_delta);
    a token no product has any more loses its row."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO products_tokencount AS c (token, products)
            SELECT token, sum(products) FROM m_token_delta GROUP BY token
            ON CONFLICT (token) DO UPDATE SET products = c.products + excluded.products
            """
        )
        cursor.execute(
            "DELETE FROM products_tokencount c USING m_token_delta d "
            "WHERE c.token = d.token AND c.products <= 0"
        )
        cursor.execute("TRUNCATE m_token_delta")
