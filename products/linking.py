"""The matching cascade: supplier lines linked to our products (SupplierLink).

For an accepted import (``links_match``), the lines matched are its config's current
entries that the import added or changed, and those with no link at all; a line with a
confirmed or rejected link keeps it. In order, a line is linked by:

1. its existing link (a line the import did not change keeps it);
2. barcode: a valid barcode of the line that exactly one active product has. When the
   line's article and brand point at another product the two disagree: a conflict,
   never a link; both products become candidates with the conflict in ``differed``;
3. article + brand as normalised (products.normalize): one active product;
4. name similarity: the candidates found through the rarest words of the line's
   normalised name (products.keys' tokens), scored by the overlap of the words (order,
   spelling variants and abbreviations do not count), the brand weighed in.

A decisive attribute (size, volume, weight, length, pack, power, current, colour) both
sides state and that differs blocks an automatic link whatever the step: the link is
proposed instead. Above ``PRICEFEED_MATCH_AUTO`` (and clearly ahead of the next
candidate) a name link is made (state auto); between ``PRICEFEED_MATCH_REVIEW`` and it,
proposed; below, the line stays unlinked. Proposed and unlinked lines keep their
candidates (LinkCandidate) for the review queue. A product rejected for a SKU is never
proposed for it again. Every link change writes a LinkEvent. Running the cascade twice
changes nothing.

Set-based: the lines are normalised in Python and COPYed into temporary tables, the
candidates found in one join against MatchToken, the decisions made in Python, and the
links, events and candidates written with a few statements.

Outside a transaction a config's lines are matched as ``PRICEFEED_MATCH_PARTS`` parts
side by side, each a transaction on its own connection, in a process of its own
(core.parts: the first in the caller, the others forked from it): each part's Python
runs on a core, and while one part's statements run in PostgreSQL another's Python goes
on. A line's part comes from a hash of its SKU (one of SKU_BUCKETS buckets); each part
holds, until it commits, the advisory locks of its config's buckets, taken in ascending
order, so two matchings of one config never touch the same lines at once. A person's
new link (products.review, products.links_transfer) takes its line's bucket lock too
(lines_lock). A part that fails leaves the others committed; the import's event is then
retried, and running the cascade again changes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from core.parts import side_by_side
from pricefeed.imports.storage import COPY_ESCAPES
from pricefeed.models import PriceImport, item_key
from pricefeed.parsing.table import gc_paused

from . import events, keys, normalize
from .models import SupplierLink

logger = logging.getLogger(__name__)

Kind = SupplierLink.Kind
State = SupplierLink.State

# A word found in more products than this is no way to find candidates (болт, краска).
WORD_DF_CAP = 1_000
# The rarest words of a line a candidate is found through.
BLOCK_WORDS = 2
# Candidates per line scored (by how many of those words they share).
CANDIDATES_SCORED = 12
# Candidates per line compared closely (attributes, brand, words) by name score.
CANDIDATES_CLOSER = 6
# Candidates per line kept for the review queue.
CANDIDATES_KEPT = 3
# A name link is automatic only this far ahead of the next candidate.
AUTO_MARGIN = 0.04
# Below this a product is not even a candidate.
CANDIDATE_FLOOR = 0.3
BARCODE_CONFIDENCE = Decimal("1.000")
ARTICLE_CONFIDENCE = Decimal("0.950")
ARTICLE_ONLY_CONFIDENCE = Decimal("0.900")
# The temporary tables' statistics: a sample of 300 x this many rows.
STATISTICS_TARGET = 10
# A config's lines fall into this many buckets by their SKU (a fixed power of 2: every
# instance's); a part of the matching holds the advisory locks of its buckets.
SKU_BUCKETS = 16
SKU_BUCKET = f"(hashtext(e.sku) & {SKU_BUCKETS - 1})"
# The locks of a config's buckets given, in the order given (ascending, as every
# matching takes them: no deadlock), held until the transaction ends.
LOCK_SQL = (
    "SELECT count(pg_advisory_xact_lock(hashtext('products.links'),"
    " hashtext(%s::bigint || ':' || b))) FROM unnest(%s::int[]) b"
)
_BUCKETS_OF = (
    f"SELECT DISTINCT c, hashtext(s) & {SKU_BUCKETS - 1}"
    " FROM unnest(%s::bigint[], %s::text[]) AS t (c, s)"
)


# How a candidate was found (bits): by a barcode of the line, by its article.
BY_BARCODE = 1
BY_ARTICLE = 2
# The keys of the candidate products, by product: (brand key, article key, the name's
# words, the decisive attributes).
Products = dict[int, tuple[str, str, frozenset[str], dict[str, str]]]


@dataclass(frozen=True)
class Thresholds:
    """The operator's thresholds of name similarity (0..1)."""

    auto: float
    review: float

    @classmethod
    def from_settings(cls) -> Thresholds:
        return cls(
            auto=float(settings.PRICEFEED_MATCH_AUTO), review=float(settings.PRICEFEED_MATCH_REVIEW)
        )


@dataclass(slots=True)
class Line:
    sku: str
    name_key: str
    brand_key: str
    article_key: str
    barcodes: list[str]
    words: frozenset[str]
    attributes: dict[str, str]


@dataclass(slots=True)
class Candidate:
    product_id: int
    by_barcode: bool
    by_article: bool
    brand_key: str
    article_key: str
    words: frozenset[str]
    # The decisive attributes (one dict per distinct stored value: not to be changed).
    attributes: dict[str, str]
    score: float = 0.0
    kind: str = Kind.NAME
    # Written out only for the candidates kept (_annotate).
    matched: Sequence[dict[str, str]] = ()
    differed: Sequence[dict[str, str]] = ()
    # What blocks an automatic link: a decisive attribute or the brand differs.
    blocking: bool = False
    # Every word of the product's name is on the line, and the line has no other word
    # that says what it is.
    same_words: bool = False
    # A barcode and an article that point at different products: shown as differed.
    conflicts: Sequence[dict[str, str]] = ()


@dataclass(slots=True)
class Decision:
    """What the cascade found for one line: a link (product, kind, confidence, state)
    or none, and the candidates the review queue shows."""

    sku: str
    product_id: int | None = None
    kind: str = ""
    confidence: Decimal = Decimal(0)
    state: str = ""
    candidates: list[Candidate] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """What a run of the cascade (or of one of its parts) did."""

    lines: int = 0
    linked: int = 0
    proposed: int = 0
    unlinked: int = 0
    changed: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    # Seconds each stage took (keys, lines, candidates, decide, write; summed over the
    # parts): for the logs and the bench.
    seconds: dict[str, float] = field(default_factory=dict)

    def __add__(self, other: Outcome) -> Outcome:
        by_kind = dict(self.by_kind)
        for kind, count in other.by_kind.items():
            by_kind[kind] = by_kind.get(kind, 0) + count
        seconds = dict(self.seconds)
        for stage, took in other.seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + took
        return Outcome(
            lines=self.lines + other.lines,
            linked=self.linked + other.linked,
            proposed=self.proposed + other.proposed,
            unlinked=self.unlinked + other.unlinked,
            changed=self.changed + other.changed,
            by_kind=by_kind,
            seconds=seconds,
        )


# -- lines ------------------------------------------------------------------------------------

_LINES = f"""
SELECT e.sku, e.name, e.brand, e.article, e.barcodes
  FROM pricefeed_priceitem e
  LEFT JOIN products_supplierlink l ON l.config_id = e.config_id AND l.supplier_sku = e.sku
 WHERE e.config_id = %(config)s AND e.valid_from IS NOT NULL AND e.valid_to IS NULL
   AND (l.id IS NULL
        OR (e.id >= %(first)s AND e.id < %(last)s AND l.state IN ('auto', 'proposed'))
        OR l.state = 'rejected')
   AND {SKU_BUCKET} = ANY (%(buckets)s)
"""


def _line(
    sku: str,
    name: str,
    brand: str,
    article: str,
    barcodes: list[str],
    brands: keys.BrandIndex | None = None,
) -> Line:
    """A line as compared: as products.keys.product_key compares a product (its codes'
    tokens made when they are COPYed, _code_rows)."""
    article_key, brand_key, name_key, attributes, words = keys.compared(
        name or "", brand or "", article or "", brands
    )
    return Line(sku, name_key, brand_key, article_key, list(barcodes or ()), words, attributes)


def lines_of(
    config_id: int, import_id: int | None, buckets: Sequence[int] = range(SKU_BUCKETS)
) -> list[Line]:
    """The lines to match (those whose SKU is in ``buckets``): the config's current
    entries the import added or changed (with no link or one the matching made), and
    every one with no link or a rejected one (for new candidates)."""
    first, last = (item_key(import_id, 0), item_key(import_id + 1, 0)) if import_id else (0, 0)
    with connection.cursor() as cursor:
        cursor.execute(
            _LINES,
            {"config": config_id, "first": first, "last": last, "buckets": list(buckets)},
        )
        rows = cursor.fetchall()
    brands = keys.known_brands()
    return [
        _line(sku, name, brand, article, codes, brands) for sku, name, brand, article, codes in rows
    ]


# -- candidates -------------------------------------------------------------------------------

_SETUP = """
CREATE TEMP TABLE IF NOT EXISTS m_line_code (n int, token text) ON COMMIT DROP;
CREATE TEMP TABLE IF NOT EXISTS m_token (token text) ON COMMIT DROP;
CREATE TEMP TABLE IF NOT EXISTS m_block (n int, rare text, other text) ON COMMIT DROP;
CREATE TEMP TABLE IF NOT EXISTS m_line_name (n int, name_key text) ON COMMIT DROP;
CREATE TEMP TABLE IF NOT EXISTS m_pair (n int, product_id bigint, how int) ON COMMIT DROP;
TRUNCATE m_line_code, m_token, m_block, m_line_name, m_pair;
"""
# The products with a barcode or the article of a line: the first steps of the cascade
# (kept aside first: joined with the keys once their number is known, the planner
# hashes the few pairs, not a million keys).
_CODES = f"""
INSERT INTO m_pair
SELECT lc.n, t.product_id,
       bit_or(CASE WHEN lc.token LIKE 'b:%%' THEN {BY_BARCODE} ELSE {BY_ARTICLE} END)
  FROM m_line_code lc JOIN products_matchtoken t ON t.token = lc.token
 GROUP BY lc.n, t.product_id;
ANALYZE m_pair;
"""
# The products whose name has exactly the line's words (hash index on name_key), for
# the lines the codes left (m_line_name holds only those).
_EXACT = """
INSERT INTO m_pair
SELECT l.n, k.product_id, 0
  FROM m_line_name l JOIN products_productkey k ON k.name_key = l.name_key
RETURNING n
"""
# How many active products have each of the tokens (TokenCount, kept by keys_refresh;
# counted up to the cap, as weights and blocking read them): those no product has are
# left out.
_DF = f"""
SELECT c.token, least(c.products, {WORD_DF_CAP + 1})
  FROM m_token t JOIN products_tokencount c ON c.token = t.token
"""
# The pairs found by the codes (how: BY_BARCODE, BY_ARTICLE bits) and those found by
# name (how 0: exact names, words); the brand keys of the products found by an article;
# and the keys of every product a pair has, each once (a product is a candidate of many
# lines that share their rarest words).
_CODE_PAIRS = "SELECT n, product_id, how FROM m_pair WHERE how <> 0"
_NAME_PAIRS = "SELECT n, product_id, how FROM m_pair WHERE how = 0"
_BRANDS = "SELECT product_id, brand_key FROM products_productkey WHERE product_id = ANY (%s)"
# The keys of the pairs' products are read in one pass over the keys, each key's id
# tested in a bitmap of the ids wanted (_bitmap): a hash of the ids probed by each of a
# million keys took ~2.5x as long. Ids too large for a bitmap of at most BITMAP_BYTES
# (never so far: a catalogue's ids are its products' sequence) are probed in the hash.
BITMAP_BYTES = 32 * 2**20
_PAIR_PRODUCTS = """
SELECT k.product_id, k.brand_key, k.article_key, k.name_key, k.attributes::text
  FROM products_productkey k
 WHERE CASE WHEN k.product_id >= 0 AND k.product_id < %(top)s
            THEN get_bit(%(wanted)s::bytea, k.product_id) = 1 END
"""
_PAIR_PRODUCTS_HASHED = """
SELECT k.product_id, k.brand_key, k.article_key, k.name_key, k.attributes::text
  FROM products_productkey k
 WHERE k.product_id IN (SELECT product_id FROM m_pair)
"""
# Per line, the products that have both its rarest words, then those with either, each
# in product order, the first CANDIDATES_SCORED of them. Both lists are read from the
# inverted index in product order and stop early (LIMIT): no line's postings are read
# whole, nor all lines' pairs sorted together.
_CANDIDATES = f"""
INSERT INTO m_pair
SELECT c.n, c.product_id, 0
  FROM (
    SELECT f.n, f.product_id,
           row_number() OVER (PARTITION BY f.n ORDER BY f.shared DESC, f.product_id) AS r
      FROM (
        SELECT DISTINCT ON (u.n, u.product_id) u.n, u.product_id, u.shared
          FROM (
            SELECT b.n, both_.product_id, 2 AS shared
              FROM m_block b CROSS JOIN LATERAL (
                SELECT t.product_id FROM products_matchtoken t
                 WHERE t.token = b.rare AND EXISTS (
                       SELECT 1 FROM products_matchtoken o
                        WHERE o.token = b.other AND o.product_id = t.product_id)
                 ORDER BY t.product_id LIMIT {CANDIDATES_SCORED}) both_
             WHERE b.other IS NOT NULL
            UNION ALL
            SELECT b.n, either.product_id, 1
              FROM m_block b CROSS JOIN LATERAL (
                SELECT e.product_id FROM (
                  (SELECT t.product_id FROM products_matchtoken t WHERE t.token = b.rare
                    ORDER BY t.product_id LIMIT {CANDIDATES_SCORED})
                  UNION
                  (SELECT t.product_id FROM products_matchtoken t WHERE t.token = b.other
                    ORDER BY t.product_id LIMIT {CANDIDATES_SCORED})
                ) e ORDER BY e.product_id LIMIT {CANDIDATES_SCORED}) either
          ) u
         ORDER BY u.n, u.product_id, u.shared DESC
      ) f
  ) c
 WHERE c.r <= {CANDIDATES_SCORED};
ANALYZE m_pair;
"""


def _candidates(lines: list[Line]) -> tuple[dict[int, dict[int, int]], Products, dict[str, int]]:
    """Per line (by position), the products found through its tokens (product id → how:
    BY_BARCODE, BY_ARTICLE or neither); those products' keys; and how many products have
    each token looked up (up to the cap; one no product has is left out).

    In the cascade's order, each step for the lines the steps before left: the codes
    (barcodes and articles) for every line; the exact name for the lines the codes do not
    settle; the rarest words for the lines neither settles. The pairs found are kept in
    m_pair, and the keys of their products read once, at the end."""
    with connection.cursor() as cursor:
        cursor.execute(_SETUP)
        raw = cursor.cursor
        with raw.copy("COPY m_line_code (n, token) FROM STDIN") as copy:
            copy.write(_copy_text(_code_rows(lines)))
        cursor.execute("SET LOCAL work_mem = '64MB'")
        # Short statements over many rows: compiling them (JIT) costs more than it saves.
        cursor.execute("SET LOCAL jit = off")
        # The temporary tables' row counts and a few common values are what the plans
        # need: ANALYZE samples 3,000 rows, not the default 30,000.
        cursor.execute(f"SET LOCAL default_statistics_target = {STATISTICS_TARGET}")
        cursor.execute("ANALYZE m_line_code")
        found: dict[int, dict[int, int]] = defaultdict(dict)
        with _by_key(cursor):
            cursor.execute(_CODES)
        cursor.execute(_CODE_PAIRS)
        _collect(cursor.fetchall(), found)
        brands = _article_brands(cursor, found)
        left = [
            n
            for n in range(len(lines))
            if n not in found or not _settled(lines[n], found[n], brands)
        ]
        with raw.copy("COPY m_line_name (n, name_key) FROM STDIN") as copy:
            copy.write(
                _copy_text([f"{n}\t{lines[n].name_key}\n" for n in left if lines[n].name_key])
            )
        cursor.execute("ANALYZE m_line_name")
        with _by_key(cursor):
            cursor.execute(_EXACT)
            named = {n for (n,) in cursor.fetchall()}
        # The lines by name: those the codes found nothing for and a name names.
        words_left = [n for n in left if n in found or n not in named]
        tokens = {"a:" + line.article_key for line in lines if line.article_key}
        for n in words_left:
            tokens.update(["w:" + word for word in lines[n].words])
        with raw.copy("COPY m_token (token) FROM STDIN") as copy:
            for token in sorted(tokens):
                copy.write_row((token,))
        cursor.execute("ANALYZE m_token")
        with _by_key(cursor):
            cursor.execute(_DF)
            df = dict(cursor.fetchall())
        blocks = []
        for n in words_left:
            rarest = _rarest(lines[n], df)
            if rarest:
                blocks.append((rarest[0], n, rarest[1] if len(rarest) > 1 else None))
        blocks.sort(key=lambda block: block[:2])
        with raw.copy("COPY m_block (n, rare, other) FROM STDIN") as copy:
            for rare, n, other in blocks:
                copy.write_row((n, rare, other))
        cursor.execute("ANALYZE m_block")
        cursor.execute(_CANDIDATES)
        cursor.execute(_NAME_PAIRS)
        _collect(cursor.fetchall(), found)
        products: Products = {}
        wanted = {product_id for pairs in found.values() for product_id in pairs}
        if wanted:
            if 0 <= min(wanted) and max(wanted) < BITMAP_BYTES * 8:
                top, bitmap = _bitmap(wanted)
                cursor.execute(_PAIR_PRODUCTS, {"top": top, "wanted": bitmap})
            else:
                cursor.execute(_PAIR_PRODUCTS_HASHED)
            _products(cursor.fetchall(), products)
    return found, products, df


def _bitmap(ids: Iterable[int]) -> tuple[int, bytes]:
    """Non-negative ids as a bitmap, as PostgreSQL's get_bit reads a bytea (id i: bit
    i % 8 of byte i // 8), and the first id past it."""
    ids = list(ids)
    top = max(ids) + 1
    bits = bytearray((top + 7) >> 3)
    for i in ids:
        bits[i >> 3] |= 1 << (i & 7)
    return top, bytes(bits)


@contextlib.contextmanager
def _by_key(cursor: Any) -> Iterator[None]:
    """The statements within look each line's keys up in the index, one by one: the
    planner, not knowing how few of a million keys a list's lines meet, read every key
    instead (the codes' products, the exact names, the words' counts: ~40 % slower)."""
    for method in ("seqscan", "mergejoin", "hashjoin"):
        cursor.execute(f"SET LOCAL enable_{method} = off")
    yield
    for method in ("seqscan", "mergejoin", "hashjoin"):
        cursor.execute(f"SET LOCAL enable_{method} TO DEFAULT")


def _article_brands(cursor: Any, found: dict[int, dict[int, int]]) -> dict[int, str]:
    """The brand keys of the products found by an article (_settled compares them with
    the line's), looked up by id."""
    wanted = {
        product_id
        for pairs in found.values()
        for product_id, how in pairs.items()
        if how & BY_ARTICLE
    }
    if not wanted:
        return {}
    cursor.execute(_BRANDS, [sorted(wanted)])
    return dict(cursor.fetchall())


def _code_rows(lines: list[Line]) -> list[str]:
    """COPY rows (n, token) of the lines' barcode and article tokens, in token order (the
    index of the tokens is then searched in its own order: next to the page before)."""
    codes = [
        (token, n)
        for n, line in enumerate(lines)
        for token in keys.code_tokens(line.article_key, line.barcodes)
    ]
    codes.sort()
    return [f"{n}\t{token}\n" for token, n in codes]


def _rarest(line: Line, df: dict[str, int]) -> list[str]:
    """The tokens of the line's BLOCK_WORDS rarest words that some product has and not
    too many (at most WORD_DF_CAP), rarest first (ties in token order)."""
    counted = []
    for word in line.words:
        token = "w:" + word
        count = df.get(token, 0)
        if 1 <= count <= WORD_DF_CAP:
            counted.append((count, token))
    counted.sort()
    return [token for _, token in counted[:BLOCK_WORDS]]


def _copy_text(rows: list[str]) -> str:
    """COPY text of rows of an int and one text made as ``f"{n}\\t{text}\\n"``. Tokens and
    name keys are letters, digits and ``: . ,``: when one holds a backslash, tab or line
    break after all, the rows are made again with the text escaped."""
    text = "".join(rows)
    if (
        "\\" not in text
        and "\r" not in text
        and text.count("\n") == len(rows)
        and (text.count("\t") == len(rows))
    ):
        return text
    escaped = []
    for row in rows:
        n, value = row[:-1].split("\t", 1)
        escaped.append(f"{n}\t{value.translate(COPY_ESCAPES)}\n")
    return "".join(escaped)


def _settled(line: Line, pairs: dict[int, int], brands: dict[int, str]) -> bool:
    """Whether a line's barcode or article and brand name one product: the later steps
    have nothing to add (``brands``: _article_brands')."""
    barcode = [product_id for product_id, how in pairs.items() if how & BY_BARCODE]
    article = [
        product_id
        for product_id, how in pairs.items()
        if how & BY_ARTICLE and brands.get(product_id) == line.brand_key
    ]
    if len(barcode) == 1:
        return all(product_id == barcode[0] for product_id in article)
    return not barcode and len(article) == 1 and bool(line.brand_key)


def _products(rows: Iterable[tuple], products: Products) -> None:
    """Candidate products' keys as the decisions read them, by product."""
    for product_id, brand, article, name, attrs in rows:
        if product_id not in products:
            products[product_id] = (brand, article, frozenset(name.split()), _attributes(attrs))


def _collect(rows: Iterable[tuple[int, int, int]], found: dict[int, dict[int, int]]) -> None:
    """The pairs (line, product, how) into ``found``: how a product was found by several
    steps is what each found."""
    for n, product_id, how in rows:
        pairs = found[n]
        pairs[product_id] = pairs.get(product_id, 0) | how


@functools.lru_cache(maxsize=65_536)
def _attributes(stored: str) -> dict[str, str]:
    """Stored decisive attributes (JSON) as a dict, once per distinct value (a catalogue
    has few: {"size": "m8x40"} is the size of thousands of products)."""
    return json.loads(stored) if stored else {}


# -- deciding ---------------------------------------------------------------------------------


def _weight(df: int | None, total: int) -> float:
    """A word's weight: rare words say more (a word no product has weighs as a
    product-unique one)."""
    return math.log(1 + total / max(df or 1, 1))


class Weights:
    """The weights of words by how many products have them, for one run: a count is
    at most the cap, so each weight is computed once."""

    __slots__ = ("by_count", "by_word", "df")

    def __init__(self, df: dict[str, int], total: int) -> None:
        self.df = df
        self.by_count = [_weight(count, total) for count in range(WORD_DF_CAP + 2)]
        # Each word's, once it was asked for (lines share most of their words).
        self.by_word: dict[str, float] = {}

    def of(self, line: Line) -> dict[str, float]:
        """The weight of each word of the line."""
        by_word = self.by_word
        weights = {}
        for word in line.words:
            weight = by_word.get(word)
            if weight is None:
                weight = by_word[word] = self.by_count[self.df.get("w:" + word, 1)]
            weights[word] = weight
        return weights


def _scored(
    line: Line, pairs: dict[int, int], products: Products, weights: dict[str, float]
) -> list[tuple[float, int, int]]:
    """The line's candidates as (-score, product, how), best first (ties in product
    order: the same data gives the same links whatever order the database returned the
    candidates in). The score says how alike the names are, 0..1: the weighted share of
    the words both have (Dice), with the brand weighed in (the same brand: a bonus;
    another brand: a penalty)."""
    words, brand = line.words, line.brand_key
    line_total = sum(weights.values())
    # The product's own words not on the line: weighed as the line's words are on average.
    mean = line_total / len(words) if words else 0.0
    scored = []
    for product_id, how in pairs.items():
        product_brand, _, product_words, _ = products[product_id]
        common = words & product_words
        if common:
            shared = sum([weights[w] for w in common])
            product_total = shared + mean * (len(product_words) - len(common))
            score = 2 * shared / (line_total + product_total)
            if brand and product_brand:
                score = min(1.0, score + 0.05) if brand == product_brand else score * 0.8
        else:
            score = 0.0
        scored.append((-score, product_id, how))
    scored.sort()
    return scored


def _closer(
    line: Line, scored: list[tuple[float, int, int]], products: Products
) -> list[Candidate]:
    """The candidates that can count, looked at closer: those found by a code, and the
    closest by name; each with whether it may be linked automatically (no decisive
    attribute nor the brand differs) and whether its words are the line's: all the
    decision needs. What matched and differed is written out (``_annotate``) only for
    the candidates kept."""
    words = line.words
    closer = []
    for i, (negative, product_id, how) in enumerate(scored):
        if i >= CANDIDATES_CLOSER and not how:
            continue
        product_brand, article, product_words, theirs = products[product_id]
        closer.append(
            Candidate(
                product_id,
                bool(how & BY_BARCODE),
                bool(how & BY_ARTICLE),
                product_brand,
                article,
                product_words,
                theirs,
                score=-negative,
                blocking=_blocks(line, product_brand, theirs),
                same_words=words == product_words,
            )
        )
    return closer


def _blocks(line: Line, product_brand: str, theirs: dict[str, str]) -> bool:
    """Whether the brand or a decisive attribute that both the line and a product state
    differs: then the line may not be linked to it automatically."""
    brand, ours = line.brand_key, line.attributes
    return bool(
        (brand and product_brand and brand != product_brand)
        or (ours and theirs and any(ours[a] != theirs[a] for a in ours.keys() & theirs.keys()))
    )


def _annotate(line: Line, candidate: Candidate) -> None:
    """What matched and what differed, as the review queue shows them."""
    attributes = candidate.attributes
    matched = normalize.agreements(line.attributes, attributes)
    differed = normalize.conflicts(line.attributes, attributes)
    if line.brand_key and candidate.brand_key:
        entry = {"attribute": "brand", "line": line.brand_key, "product": candidate.brand_key}
        (matched if line.brand_key == candidate.brand_key else differed).append(entry)
    if candidate.by_article:
        matched.append(
            {"attribute": "article", "line": line.article_key, "product": candidate.article_key}
        )
    if candidate.by_barcode:
        matched.append({"attribute": "barcode", "line": ",".join(line.barcodes), "product": ""})
    missing = candidate.words - line.words
    extra = line.words - candidate.words
    if missing or extra:
        differed.append(
            {
                "attribute": "name",
                "line": " ".join(sorted(extra)),
                "product": " ".join(sorted(missing)),
            }
        )
    candidate.matched, candidate.differed = matched, [*differed, *candidate.conflicts]


def decide(
    line: Line,
    pairs: dict[int, int],
    products: Products,
    weighing: Weights,
    thresholds: Thresholds,
    rejected: set[int],
) -> Decision:
    """The cascade for one line, from the products found for it (product id → how)."""
    decision = _decide(line, pairs, products, weighing, thresholds, rejected)
    if decision.state != State.AUTO:
        for candidate in decision.candidates:
            _annotate(line, candidate)
    return decision


def _decide(
    line: Line,
    pairs: dict[int, int],
    products: Products,
    weighing: Weights,
    thresholds: Thresholds,
    rejected: set[int],
) -> Decision:
    if rejected:
        pairs = {p: how for p, how in pairs.items() if p not in rejected}
    if len(pairs) == 1:
        linked = _one_linked(line, pairs, products, weighing, thresholds)
        if linked is not None:
            return linked
    found = _closer(line, _scored(line, pairs, products, weighing.of(line)), products)
    decision = Decision(sku=line.sku)
    by_barcode = [c for c in found if c.by_barcode]
    by_article = [
        c for c in found if c.by_article and line.brand_key and c.brand_key == line.brand_key
    ]
    if len(by_barcode) == 1:
        product = by_barcode[0]
        others = [c for c in by_article if c.product_id != product.product_id]
        if others:  # the barcode says one product, the article and brand another
            conflict = {
                "attribute": "barcode",
                "line": ",".join(line.barcodes),
                "product": "",
            }
            product.kind = Kind.BARCODE
            product.conflicts = [conflict | {"attribute": "article"}]
            for other in others:
                other.kind = Kind.ARTICLE
                other.conflicts = [conflict]
            decision.candidates = [product, *others][:CANDIDATES_KEPT]
            return decision
        return _link(decision, product, Kind.BARCODE, BARCODE_CONFIDENCE, found)
    if len(by_article) == 1:
        return _link(decision, by_article[0], Kind.ARTICLE, ARTICLE_CONFIDENCE, found)
    if not line.brand_key and weighing.df.get("a:" + line.article_key) == 1:
        only = [c for c in found if c.by_article]
        if len(only) == 1 and only[0].score >= thresholds.review:
            return _link(decision, only[0], Kind.ARTICLE, ARTICLE_ONLY_CONFIDENCE, found)
    ranked = sorted(
        (c for c in found if c.score >= CANDIDATE_FLOOR),
        key=lambda c: (not c.by_barcode and not c.by_article, c.blocking, -c.score),
    )
    if by_barcode or by_article:  # several products share the barcode or the article
        ranked.sort(key=lambda c: (not (c.by_barcode or c.by_article), -c.score))
    if not ranked:
        return decision
    best = ranked[0]
    best.kind = Kind.BARCODE if best.by_barcode else Kind.ARTICLE if best.by_article else Kind.NAME
    if by_barcode or by_article or best.score < thresholds.review:
        decision.candidates = ranked[:CANDIDATES_KEPT]
        if best.score >= thresholds.review:
            _propose(decision, best)
        return decision
    runner_up = max((c.score for c in found if c is not best), default=0.0)
    confidence = Decimal(str(round(best.score, 3)))
    clear = best.score - runner_up >= AUTO_MARGIN
    if best.score >= thresholds.auto and clear and best.same_words and not best.blocking:
        return _link(decision, best, Kind.NAME, confidence, found)
    decision.candidates = ranked[:CANDIDATES_KEPT]
    _propose(decision, best)
    return decision


def _one_linked(
    line: Line,
    pairs: dict[int, int],
    products: Products,
    weighing: Weights,
    thresholds: Thresholds,
) -> Decision | None:
    """The automatic link of a line one product was found for, as _decide makes it, by
    a shorter way (seven lines in ten in bench/matching.py: the barcode's product, the
    article's, or the one whose name has the line's words); None where that product may
    not be linked automatically (a decisive attribute or the brand differs, an article
    without a brand, a name not close enough): _decide's full way then says what it
    is."""
    ((product_id, how),) = pairs.items()
    product_brand, _, product_words, theirs = products[product_id]
    if _blocks(line, product_brand, theirs):
        return None
    brand = line.brand_key
    if how & BY_BARCODE:
        kind, confidence = Kind.BARCODE, BARCODE_CONFIDENCE
    elif how & BY_ARTICLE:
        if not brand or product_brand != brand:
            return None
        kind, confidence = Kind.ARTICLE, ARTICLE_CONFIDENCE
    else:
        if line.words != product_words:
            return None
        ((negative, _, _),) = _scored(line, pairs, products, weighing.of(line))
        score = -negative
        # (no runner-up: clearly ahead when at least the margin above nothing)
        if (
            score < thresholds.auto
            or score < thresholds.review
            or score < CANDIDATE_FLOOR
            or score < AUTO_MARGIN
        ):
            return None
        kind, confidence = Kind.NAME, Decimal(str(round(score, 3)))
    return Decision(
        sku=line.sku, product_id=product_id, kind=kind, confidence=confidence, state=State.AUTO
    )


def _propose(decision: Decision, candidate: Candidate) -> None:
    decision.product_id = candidate.product_id
    decision.kind = candidate.kind
    decision.confidence = Decimal(str(round(min(candidate.score, 1.0), 3)))
    decision.state = State.PROPOSED


def _link(
    decision: Decision,
    product: Candidate,
    kind: str,
    confidence: Decimal,
    found: list[Candidate],
) -> Decision:
    """An automatic link, unless a decisive attribute differs: then a proposal."""
    product.kind = kind
    decision.product_id = product.product_id
    decision.kind = kind
    decision.confidence = confidence
    if product.blocking:
        decision.state = State.PROPOSED
        others = sorted((c for c in found if c is not product), key=lambda c: -c.score)
        decision.candidates = [product, *others][:CANDIDATES_KEPT]
    else:
        decision.state = State.AUTO
    return decision


# -- writing ----------------------------------------------------------------------------------

# Whether the config has links and candidates at all: a list matched the first time has
# neither, and the reads by SKU below (its SKUs kept aside, their links, the products
# rejected for them, whether they have candidates) have nothing to find.
_CONFIG_HAS = """
SELECT EXISTS (SELECT FROM products_supplierlink WHERE config_id = %(config)s),
       EXISTS (SELECT FROM products_linkcandidate WHERE config_id = %(config)s)
"""
# The SKUs of the lines matched (m_sku), kept aside once for the reads and writes below.
_SKUS = """
CREATE TEMP TABLE IF NOT EXISTS m_sku (sku text) ON COMMIT DROP;
TRUNCATE m_sku;
"""
_EXISTING = """
SELECT l.supplier_sku, l.id, l.product_id, l.state, l.kind, l.confidence
  FROM products_supplierlink l JOIN m_sku s ON s.sku = l.supplier_sku
 WHERE l.config_id = %s
"""
_REJECTED = """
SELECT l.supplier_sku, e.product_after_id
  FROM products_linkevent e JOIN products_supplierlink l ON l.id = e.link_id
  JOIN m_sku s ON s.sku = l.supplier_sku
 WHERE l.config_id = %s AND e.state = 'rejected'
UNION
SELECT l.supplier_sku, l.product_id FROM products_supplierlink l
  JOIN m_sku s ON s.sku = l.supplier_sku
 WHERE l.config_id = %s AND l.state = 'rejected'
"""
_WRITE_SETUP = """
CREATE TEMP TABLE IF NOT EXISTS m_link (
  sku text, link_id bigint, product_before bigint, product_id bigint, kind text,
  confidence numeric, state text) ON COMMIT DROP;
CREATE TEMP TABLE IF NOT EXISTS m_candidate (
  sku text, product_id bigint, kind text, score numeric, rank int, matched jsonb,
  differed jsonb) ON COMMIT DROP;
TRUNCATE m_link, m_candidate;
"""
# In product order: the index of links by product grows one page after the other. No
# ON CONFLICT (~3 µs a row more): the lines have no link (_existing, read under their
# buckets' locks), and every other writer of a new link takes its line's lock first
# (lines_lock); one that did not would fail this part, and the import's event be retried.
_INSERT_LINKS = """
WITH made AS (
  INSERT INTO products_supplierlink
         (config_id, supplier_sku, product_id, kind, confidence, state)
  SELECT %(config)s, sku, product_id, kind, confidence, state FROM m_link WHERE link_id IS NULL
   ORDER BY product_id
  RETURNING id, product_id, kind, confidence, state
)
INSERT INTO products_linkevent (link_id, product_after_id, state, kind, confidence, note)
SELECT id, product_id, state, kind, confidence, '' FROM made
"""
# Only a link the matching made (auto, proposed) is changed by it.
_UPDATE_LINKS = """
WITH changed AS (
  UPDATE products_supplierlink l
     SET product_id = m.product_id, kind = m.kind, confidence = m.confidence,
         state = m.state, updated_at = now()
    FROM m_link m
   WHERE m.link_id IS NOT NULL AND l.id = m.link_id AND l.state IN ('auto', 'proposed')
  RETURNING l.id, m.product_before, l.product_id, l.kind, l.confidence, l.state
)
INSERT INTO products_linkevent
       (link_id, product_before_id, product_after_id, state, kind, confidence, note)
SELECT id, product_before, product_id, state, kind, confidence, '' FROM changed
"""
# Whether a line matched has candidates from before: a list matched the first time has
# none, and its candidates are only inserted (_NEW_CANDIDATES: only the matching writes
# candidates, and its parts hold their lines' locks; an ON CONFLICT insert cost ~3 µs
# a row more). Otherwise the candidates of the lines matched, as found now: the others
# dropped, the changed ones rewritten, the same ones left as they are (a second run
# changes nothing).
_HAD_CANDIDATES = """
SELECT EXISTS (SELECT FROM products_linkcandidate c JOIN m_sku s ON s.sku = c.supplier_sku
                WHERE c.config_id = %s)
"""
_NEW_CANDIDATES = """
INSERT INTO products_linkcandidate
       (config_id, supplier_sku, product_id, kind, score, rank, matched, differed)
SELECT %(config)s, sku, product_id, kind, score, rank, matched, differed FROM m_candidate
"""
_CANDIDATES_WRITE = """
DELETE FROM products_linkcandidate c USING m_sku s
 WHERE c.config_id = %(config)s AND c.supplier_sku = s.sku
   AND NOT EXISTS (SELECT 1 FROM m_candidate m
                    WHERE m.sku = c.supplier_sku AND m.product_id = c.product_id);
INSERT INTO products_linkcandidate
       (config_id, supplier_sku, product_id, kind, score, rank, matched, differed)
SELECT %(config)s, sku, product_id, kind, score, rank, matched, differed FROM m_candidate
ON CONFLICT (config_id, supplier_sku, product_id) DO UPDATE
   SET kind = excluded.kind, score = excluded.score, rank = excluded.rank,
       matched = excluded.matched, differed = excluded.differed, found_at = now()
 WHERE (products_linkcandidate.kind, products_linkcandidate.score,
        products_linkcandidate.rank, products_linkcandidate.matched,
        products_linkcandidate.differed)
       IS DISTINCT FROM (excluded.kind, excluded.score, excluded.rank, excluded.matched,
                         excluded.differed);
"""


# One encoder for every candidate (json.dumps with an argument makes one per call: a
# third of the time, at tens of thousands of candidates per import).
_JSON_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def _json(value: Sequence[dict[str, str]]) -> str:
    return _JSON_ENCODE(value) if value else "[]"


def _skus_aside(skus: list[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_SKUS)
        with cursor.cursor.copy("COPY m_sku FROM STDIN") as copy:
            copy.write("".join([f"{sku.translate(COPY_ESCAPES)}\n" for sku in skus]))
        cursor.execute("ANALYZE m_sku")


def _existing(config_id: int) -> dict[str, tuple]:
    with connection.cursor() as cursor:
        cursor.execute(_EXISTING, [config_id])
        return {row[0]: row[1:] for row in cursor.fetchall()}


def _rejected(config_id: int) -> dict[str, set[int]]:
    rejected: dict[str, set[int]] = defaultdict(set)
    with connection.cursor() as cursor:
        cursor.execute(_REJECTED, [config_id, config_id])
        for sku, product_id in cursor.fetchall():
            if product_id is not None:
                rejected[sku].add(product_id)
    return rejected


def _config_has(config_id: int) -> tuple[bool, bool]:
    """Whether the config has any link, and any candidate."""
    with connection.cursor() as cursor:
        cursor.execute(_CONFIG_HAS, {"config": config_id})
        links, candidates = cursor.fetchone()
    return links, candidates


def _write(
    config_id: int, decisions: list[Decision], existing: dict[str, tuple], candidates: bool
) -> int:
    """Writes the links that change and the candidates (``candidates``: whether the
    config had any before, then those of the lines matched are read first); returns how
    many links changed."""
    changes = updates = 0
    with connection.cursor() as cursor:
        cursor.execute(_WRITE_SETUP)
        raw = cursor.cursor
        with raw.copy("COPY m_link FROM STDIN") as copy:
            for d in decisions:
                if d.product_id is None:
                    continue  # an unlinked line keeps a link it has
                before = existing.get(d.sku)
                if before is None:
                    copy.write_row((d.sku, None, None, d.product_id, d.kind, d.confidence, d.state))
                    changes += 1
                    continue
                link_id, product_id, state, kind, confidence = before
                if state not in (State.AUTO, State.PROPOSED):
                    continue
                if (product_id, state, kind, confidence) == (
                    d.product_id,
                    d.state,
                    d.kind,
                    d.confidence,
                ):
                    continue
                copy.write_row(
                    (d.sku, link_id, product_id, d.product_id, d.kind, d.confidence, d.state)
                )
                changes += 1
                updates += 1
        with raw.copy("COPY m_candidate FROM STDIN") as copy:
            for d in decisions:
                if d.state == State.AUTO:
                    continue
                for rank, c in enumerate(d.candidates, start=1):
                    copy.write_row(
                        (
                            d.sku,
                            c.product_id,
                            c.kind,
                            Decimal(str(round(min(c.score, 1.0), 3))),
                            rank,
                            _json(c.matched),
                            _json(c.differed),
                        )
                    )
        if changes > updates:
            cursor.execute(_INSERT_LINKS, {"config": config_id})
        if updates:
            cursor.execute(_UPDATE_LINKS)
        had = False
        if candidates:
            cursor.execute(_HAD_CANDIDATES, [config_id])
            (had,) = cursor.fetchone()
        cursor.execute(_CANDIDATES_WRITE if had else _NEW_CANDIDATES, {"config": config_id})
    return changes


# -- the cascade ------------------------------------------------------------------------------


def lines_match(config_id: int, lines: list[Line], thresholds: Thresholds | None = None) -> Outcome:
    """Runs the cascade on ``lines`` of a config, inside the caller's transaction."""
    thresholds = thresholds or Thresholds.from_settings()
    if not lines:
        return Outcome()
    skus = [line.sku for line in lines]
    seconds: dict[str, float] = {}
    # Asked first: later, the config's other parts may have written links they have not
    # committed, which the look would step over one by one. (The lines' bucket locks are
    # held: no one else writes a link or candidate of these lines meanwhile.)
    has_links, has_candidates = _config_has(config_id)
    started = time.perf_counter()
    found, products, df = _candidates(lines)
    seconds["candidates"] = time.perf_counter() - started
    total = max(keys.keyed_total(), 1)
    if has_links or has_candidates:
        _skus_aside(skus)
    rejected = _rejected(config_id) if has_links else {}
    existing = _existing(config_id) if has_links else {}
    started = time.perf_counter()
    weighing = Weights(df, total)
    no_products: set[int] = set()
    decisions = [
        decide(
            line,
            found.get(n, {}),
            products,
            weighing,
            thresholds,
            rejected.get(line.sku, no_products),
        )
        for n, line in enumerate(lines)
    ]
    seconds["decide"] = time.perf_counter() - started
    # A rejected link stays as the operator left it; its line only gets new candidates.
    for d in decisions:
        before = existing.get(d.sku)
        if before is not None and before[2] == State.REJECTED:
            d.product_id, d.state = None, ""
    started = time.perf_counter()
    changed = _write(config_id, decisions, existing, has_candidates)
    seconds["write"] = time.perf_counter() - started
    by_kind: dict[str, int] = defaultdict(int)
    for d in decisions:
        if d.state == State.AUTO:
            by_kind[d.kind] += 1
    return Outcome(
        lines=len(lines),
        linked=sum(1 for d in decisions if d.state == State.AUTO),
        proposed=sum(1 for d in decisions if d.state == State.PROPOSED),
        unlinked=sum(1 for d in decisions if d.product_id is None),
        changed=changed,
        by_kind=dict(by_kind),
        seconds=seconds,
    )


def links_match(
    *,
    config_id: int,
    import_id: int | None = None,
    thresholds: Thresholds | None = None,
    parts: int | None = None,
) -> Outcome:
    """The cascade for an accepted import of a config (None: every unlinked line of its
    current catalogue): the keys of products changed since refreshed first, then the
    lines matched as ``parts`` (default PRICEFEED_MATCH_PARTS) transactions side by
    side, or in the caller's transaction if there is one, and ``links.changed``
    announced."""
    started = time.perf_counter()
    # In a transaction of its own (when not inside the caller's): one refresh at a time,
    # the matchings of other configs not kept waiting for this one.
    keys.keys_refresh()
    refreshed = time.perf_counter() - started
    parts = settings.PRICEFEED_MATCH_PARTS if parts is None else parts
    parts = max(1, min(parts, SKU_BUCKETS))
    thresholds = thresholds or Thresholds.from_settings()
    # The cyclic collector paused: the cascade makes millions of small objects, none in
    # a cycle, and each collection walked them all again (a third of its time at 100k
    # lines).
    if parts == 1 or connection.in_atomic_block:
        with transaction.atomic(), gc_paused():
            outcome = _part(config_id, import_id, thresholds, range(SKU_BUCKETS))
            # The list's prices reach the offers even when no link changed.
            events.config_links_changed(config_id, import_id)
    else:
        # Read once here, not by each part (a child has its parent's copy).
        keys.known_brands()
        with gc_paused():
            done = side_by_side(
                lambda share: _part(config_id, import_id, thresholds, share, flushed_after=True),
                SKU_BUCKETS,
                parts,
                "links",
                # (the cascade is mostly Python: in threads, its parts took turns)
                processes=True,
            )
        outcome = sum(done, Outcome())
        # Once every part committed (a part that failed raised above: the import's event
        # is retried, and the parts done change nothing the second time).
        with transaction.atomic():
            events.config_links_changed(config_id, import_id)
    outcome.seconds["keys"] = refreshed
    logger.info(
        "links matched config=%s import=%s parts=%s lines=%s linked=%s proposed=%s"
        " changed=%s seconds=%s",
        config_id,
        import_id,
        parts,
        outcome.lines,
        outcome.linked,
        outcome.proposed,
        outcome.changed,
        " ".join(f"{stage}:{took:.2f}" for stage, took in outcome.seconds.items()),
        extra={"action": "links_match", "config_id": config_id, "import_id": import_id},
    )
    return outcome


def _part(
    config_id: int,
    import_id: int | None,
    thresholds: Thresholds,
    buckets: Sequence[int],
    *,
    flushed_after: bool = False,
) -> Outcome:
    """The cascade for the lines whose SKUs are in ``buckets``, in the caller's
    transaction, holding those buckets' locks. ``flushed_after``: a transaction that
    commits synchronously follows this one's commit (links_match's announcement), so
    this one's commit need not wait for its WAL to reach the disk: the WAL is written in
    order, and that later commit's flush takes this one's records with it (a crash
    before it loses both, and the import's event, never announced, is retried)."""
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(LOCK_SQL, [config_id, sorted(buckets)])
        if flushed_after:
            cursor.execute("SET LOCAL synchronous_commit = off")
    lines = lines_of(config_id, import_id, buckets)
    read = time.perf_counter() - started
    outcome = lines_match(config_id, lines, thresholds)
    outcome.seconds["lines"] = read
    return outcome


def lines_lock(lines: Iterable[tuple[int, str]]) -> None:
    """Takes, until the caller's transaction ends, the locks of the buckets of these
    (config id, SKU) lines as a matching's part holds them, and in a matching's order
    (by config, each config's buckets ascending: no deadlock). A writer of a new link
    takes its line's first: a matching's part, which inserts links without looking
    for a conflict, then never meets one, and the writer finds the link a part made."""
    pairs = list(lines)
    if not pairs:
        return
    buckets: dict[int, list[int]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(_BUCKETS_OF, [[c for c, _ in pairs], [sku for _, sku in pairs]])
        for config_id, bucket in cursor.fetchall():
            buckets[config_id].append(bucket)
        for config_id in sorted(buckets):
            cursor.execute(LOCK_SQL, [config_id, sorted(buckets[config_id])])


def import_links_match(import_id: int) -> Outcome:
    """The cascade for an accepted import (the outbox handler's service)."""
    config_id = (
        PriceImport.objects.filter(pk=import_id, accepted_at__isnull=False)
        .values_list("config_id", flat=True)
        .first()
    )
    if config_id is None:
        return Outcome()
    return links_match(config_id=config_id, import_id=import_id)


def all_lines(lines: Iterable[tuple[str, str, str, str, list[str]]]) -> list[Line]:
    """Lines from (sku, name, brand, article, barcodes) tuples (the bench, the tests)."""
    brands = keys.known_brands()
    return [
        _line(sku, name, brand, article, codes, brands)
        for sku, name, brand, article, codes in lines
    ]
