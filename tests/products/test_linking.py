"""The matching cascade (products.linking) on a config's current catalogue: which step
links a line, what blocks an automatic link, what is never overwritten, and that a
second run changes nothing."""

from __future__ import annotations

import contextlib
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.models.functions import Now

from products import keys
from products.linking import Thresholds, links_match
from products.models import (
    KnownBrand,
    LinkCandidate,
    LinkEvent,
    MatchToken,
    Product,
    SupplierLink,
    TokenCount,
)
from tests import factories

from .lines import accepted_import, products

pytestmark = pytest.mark.django_db

State = SupplierLink.State
Kind = SupplierLink.Kind

CATALOGUE = [
    ("OWN-1", "Болт М8х40 DIN 933 оцинкованный (100 шт)", "Зубр", "ZB-933-0840", ["4600000000017"]),
    ("OWN-2", "Болт М8х50 DIN 933 оцинкованный (100 шт)", "Зубр", "ZB-933-0850", ["4600000000024"]),
    ("OWN-3", "Эмаль ПФ-115 белая 0,9 кг", "Лакра", "PF115-W09", ["4600000000031"]),
    ("OWN-4", "Эмаль ПФ-115 черная 0,9 кг", "Лакра", "PF115-B09", ["4600000000048"]),
    ("OWN-5", "Сверло по металлу HSS 6 мм", "Bosch", "2608595061", []),
]


@pytest.fixture
def catalogue():
    made = products(CATALOGUE)
    return {p.own_code: p for p in made}


def link_of(config, sku) -> SupplierLink | None:
    return SupplierLink.objects.filter(config=config, supplier_sku=sku).first()


def match(config, lines):
    price_import = accepted_import(config, lines)
    return links_match(config_id=config.pk, import_id=price_import.pk)


def test_a_barcode_one_product_has_links_the_line(mailbox, catalogue):
    config = factories.create_config(mailbox)
    match(config, [("A1", "что-то совсем другое", "", "", ["4600000000017"])])
    link = link_of(config, "A1")
    assert (link.product, link.kind, link.state) == (catalogue["OWN-1"], Kind.BARCODE, State.AUTO)
    assert link.confidence == Decimal("1.000")
    event = LinkEvent.objects.get(link=link)
    assert (event.product_before, event.product_after, event.state) == (
        None,
        catalogue["OWN-1"],
        State.AUTO,
    )


def test_a_barcode_of_another_product_than_the_article_is_a_conflict_never_a_link(
    mailbox, catalogue
):
    config = factories.create_config(mailbox)
    # OWN-1's article and brand, OWN-2's barcode.
    match(config, [("A1", "Болт М8х40 оцинк.", "ЗУБР", "zb 933 840", ["4600000000024"])])
    assert link_of(config, "A1") is None
    candidates = LinkCandidate.objects.filter(config=config, supplier_sku="A1")
    assert {c.product.own_code: c.kind for c in candidates} == {
        "OWN-2": Kind.BARCODE,
        "OWN-1": Kind.ARTICLE,
    }
    assert all(c.differed for c in candidates)


def test_article_and_brand_written_otherwise_link_the_line(mailbox, catalogue):
    config = factories.create_config(mailbox)
    match(config, [("A1", "Эмаль белая", "ЛАКРА", "рf-115.w09", [])])
    link = link_of(config, "A1")
    assert (link.product, link.kind, link.state) == (catalogue["OWN-3"], Kind.ARTICLE, State.AUTO)


def test_a_name_written_otherwise_is_linked_by_its_words(mailbox, catalogue):
    config = factories.create_config(mailbox)
    match(config, [("A1", "БОЛТ оцинк. M8*40 DIN933 уп.100шт Зубр", "", "", [])])
    link = link_of(config, "A1")
    assert (link.product, link.kind, link.state) == (catalogue["OWN-1"], Kind.NAME, State.AUTO)


def test_a_decisive_attribute_that_differs_blocks_an_automatic_link(mailbox, catalogue):
    config = factories.create_config(mailbox)
    match(
        config,
        [
            # Our size with another pack; our article with another colour.
            ("A1", "Болт М8х40 DIN 933 оцинкованный (50 шт)", "Зубр", "", []),
            ("A2", "Эмаль ПФ-115 красная 0,9 кг", "Лакра", "PF115-W09", []),
        ],
    )
    assert link_of(config, "A1") is None or link_of(config, "A1").state == State.PROPOSED
    proposed = link_of(config, "A2")
    assert (proposed.product, proposed.state) == (catalogue["OWN-3"], State.PROPOSED)
    first = LinkCandidate.objects.get(config=config, supplier_sku="A2", rank=1)
    assert {"attribute": "colour", "line": "red", "product": "white"} in first.differed


def test_a_line_like_two_products_is_proposed_not_linked(mailbox, catalogue):
    products([("OWN-6", "Сверло по металлу HSS 6 мм", "Kraft", "K-6", [])])
    config = factories.create_config(mailbox)
    match(config, [("A1", "Сверло д/мет. HSS 6мм", "", "", [])])
    link = link_of(config, "A1")
    assert link.state == State.PROPOSED
    assert LinkCandidate.objects.filter(config=config, supplier_sku="A1").count() == 2


def test_thresholds_decide_between_proposed_and_unlinked(mailbox, catalogue):
    config = factories.create_config(mailbox)
    lines = [("A1", "Сверло по металлу HSS кобальт", "Bosch", "", [])]
    match(config, lines)
    assert link_of(config, "A1").state == State.PROPOSED
    other = factories.create_config(mailbox, name="другой")
    price_import = accepted_import(other, lines)
    links_match(
        config_id=other.pk, import_id=price_import.pk, thresholds=Thresholds(auto=0.99, review=0.95)
    )
    assert link_of(other, "A1") is None
    assert LinkCandidate.objects.filter(config=other, supplier_sku="A1").exists()


def test_a_confirmed_link_is_never_overwritten(mailbox, catalogue):
    config = factories.create_config(mailbox)
    SupplierLink.objects.create(
        config=config,
        supplier_sku="A1",
        product=catalogue["OWN-5"],
        kind=Kind.MANUAL,
        confidence=1,
        state=State.CONFIRMED,
    )
    match(config, [("A1", "Болт", "", "", ["4600000000017"])])
    link = link_of(config, "A1")
    assert (link.product, link.state, link.kind) == (
        catalogue["OWN-5"],
        State.CONFIRMED,
        Kind.MANUAL,
    )
    assert not LinkEvent.objects.exists()


def test_a_rejected_product_is_never_proposed_again(mailbox, catalogue):
    config = factories.create_config(mailbox)
    SupplierLink.objects.create(
        config=config,
        supplier_sku="A1",
        product=catalogue["OWN-1"],
        kind=Kind.BARCODE,
        confidence=1,
        state=State.REJECTED,
    )
    match(
        config, [("A1", "Болт М8х40 DIN 933 оцинкованный (100 шт)", "Зубр", "", ["4600000000017"])]
    )
    link = link_of(config, "A1")
    assert (link.product, link.state) == (catalogue["OWN-1"], State.REJECTED)
    assert not LinkCandidate.objects.filter(
        config=config, supplier_sku="A1", product=catalogue["OWN-1"]
    ).exists()


def test_a_changed_line_is_matched_again_and_the_change_kept_in_history(mailbox, catalogue):
    config = factories.create_config(mailbox)
    match(config, [("A1", "Болт", "", "", ["4600000000017"])])
    match(config, [("A1", "Болт", "", "", ["4600000000024"])])
    link = link_of(config, "A1")
    assert link.product == catalogue["OWN-2"]
    events = list(LinkEvent.objects.filter(link=link).order_by("pk"))
    assert [(e.product_before, e.product_after) for e in events] == [
        (None, catalogue["OWN-1"]),
        (catalogue["OWN-1"], catalogue["OWN-2"]),
    ]


def test_running_the_cascade_twice_changes_nothing(mailbox, catalogue):
    config = factories.create_config(mailbox)
    lines = [
        ("A1", "Болт", "", "", ["4600000000017"]),
        ("A2", "Эмаль ПФ-115 красная 0,9 кг", "Лакра", "PF115-W09", []),
        ("A3", "Сверло по металлу HSS кобальт", "Bosch", "", []),
        ("A4", "Перчатки рабочие", "", "", []),
    ]
    price_import = accepted_import(config, lines)
    links_match(config_id=config.pk, import_id=price_import.pk)

    def state():
        return (
            list(
                SupplierLink.objects.values_list(
                    "supplier_sku", "product", "state", "kind", "confidence", "updated_at"
                ).order_by("pk")
            ),
            list(LinkEvent.objects.values_list("pk", flat=True).order_by("pk")),
            list(
                LinkCandidate.objects.values_list(
                    "supplier_sku", "product", "rank", "score", "found_at"
                ).order_by("pk")
            ),
        )

    before = state()
    outcome = links_match(config_id=config.pk, import_id=price_import.pk)
    assert outcome.changed == 0
    assert state() == before


@pytest.mark.parametrize(
    ("line", "links", "candidates"),
    [
        # Only candidates: the config has no link, its line's candidates are found again.
        (("A1", "Болт М8 оцинкованный", "", "", []), 0, 2),
        # Only links: the config has no candidate, its line's link is found again.
        (("A1", "Болт", "", "", ["4600000000017"]), 1, 0),
    ],
)
def test_a_list_matched_again_finds_what_the_first_run_wrote(
    mailbox, catalogue, line, links, candidates
):
    """The first run of a config (no links, no candidates) writes without looking for
    them; a config with only one of the two still has them looked for."""
    config = factories.create_config(mailbox)
    price_import = accepted_import(config, [line])
    links_match(config_id=config.pk, import_id=price_import.pk)

    def state():
        return (
            list(SupplierLink.objects.values_list("pk", "product", "state", "updated_at")),
            list(LinkEvent.objects.values_list("pk", flat=True)),
            list(LinkCandidate.objects.values_list("pk", "product", "rank", "score", "found_at")),
        )

    before = state()
    assert (len(before[0]), len(before[2])) == (links, candidates)
    outcome = links_match(config_id=config.pk, import_id=price_import.pk)
    assert outcome.changed == 0
    assert state() == before


def test_a_product_changed_since_is_matched_by_its_new_key(mailbox, catalogue):
    config = factories.create_config(mailbox)
    match(config, [("A1", "Перчатки рабочие х/б", "", "", ["4600000000055"])])
    assert link_of(config, "A1") is None
    Product.objects.filter(pk=catalogue["OWN-5"].pk).update(
        barcodes=["4600000000055"], updated_at=Now()
    )
    links_match(config_id=config.pk)
    assert link_of(config, "A1").product == catalogue["OWN-5"]


def _token_indexes() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indrelid = 'products_matchtoken'::regclass ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]


def _tokens() -> list[tuple[str, int]]:
    return sorted(MatchToken.objects.values_list("token", "product_id"))


def test_refreshing_most_keys_rebuilds_the_token_indexes_and_finds_the_same(
    mailbox, catalogue, monkeypatch
):
    keys.keys_refresh()  # row by row: the catalogue is small
    indexes, tokens = _token_indexes(), _tokens()
    assert ("w:болт", catalogue["OWN-1"].pk) in tokens
    monkeypatch.setattr(keys, "REBUILD_FLOOR", 0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE products_product")
    Product.objects.update(updated_at=Now())
    assert keys.keys_refresh() == len(CATALOGUE)  # every key stale: indexes dropped, rebuilt
    assert _token_indexes() == indexes
    assert _tokens() == tokens
    config = factories.create_config(mailbox)
    match(config, [("A1", "Болт 8х40 оцинк", "", "", ["4600000000017"])])
    assert link_of(config, "A1").product == catalogue["OWN-1"]


def _counts() -> dict[str, int]:
    return dict(TokenCount.objects.values_list("token", "products"))


def _counted() -> dict[str, int]:
    counted: dict[str, int] = {}
    for token, _product in _tokens():
        counted[token] = counted.get(token, 0) + 1
    return counted


def test_token_counts_follow_every_change_retirement_and_rebuild(catalogue, monkeypatch):
    keys.keys_refresh()
    assert _counts() == _counted() and _counts()["w:болт"] >= 2

    bolt = catalogue["OWN-1"]
    Product.objects.filter(pk=bolt.pk).update(name="Шуруп 4х40", updated_at=Now())
    Product.objects.filter(pk=catalogue["OWN-2"].pk).update(retired_at=Now(), updated_at=Now())
    assert keys.keys_refresh() == 2
    assert _counts() == _counted()
    assert "w:шуруп" in _counts()

    monkeypatch.setattr(keys, "REBUILD_FLOOR", 0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE products_product")
    Product.objects.update(updated_at=Now())
    keys.keys_refresh()  # indexes dropped and rebuilt: the counts still right
    assert _counts() == _counted()


def test_a_refresh_with_no_product_written_since_looks_at_nothing(
    catalogue, django_assert_max_num_queries
):
    keys.keys_refresh()
    # The savepoint and its release, the lock, the versions: no product is read.
    with django_assert_max_num_queries(4):
        assert keys.keys_refresh() == 0

    # A write that is rolled back still moves the version on (a sequence): the next
    # refresh looks, and finds nothing stale.
    with contextlib.suppress(RuntimeError), transaction.atomic():
        Product.objects.filter(pk=catalogue["OWN-1"].pk).update(name="Другое")
        raise RuntimeError
    assert keys.keys_refresh() == 0
    Product.objects.filter(pk=catalogue["OWN-1"].pk).update(name="Винт М8", updated_at=Now())
    assert keys.keys_refresh() == 1


def test_a_lines_rarest_words_are_those_some_product_has_and_not_too_many():
    from products.linking import WORD_DF_CAP, Line, _rarest

    line = Line("L-1", "", "", "", [], frozenset({"болт", "m8", "din", "zz", "ab"}), {})
    counts = {"w:болт": WORD_DF_CAP + 1, "w:m8": 40, "w:din": 7, "w:ab": 7}
    # No product has zz, болт is too common; din and ab are as rare: in token order.
    assert _rarest(line, counts) == ["w:ab", "w:din"]
    assert _rarest(line, {"w:m8": 3}) == ["w:m8"]
    assert _rarest(line, {"w:zz": 0}) == []


def _compared(name: str, brand: str = "", article: str = "", barcodes=()) -> tuple:
    from products.linking import Line

    article_key, brand_key, name_key, attributes, words = keys.compared(name, brand, article)
    line = Line("L-1", name_key, brand_key, article_key, list(barcodes), words, attributes)
    return line, (brand_key, article_key, words, attributes)


@pytest.mark.parametrize(
    ("line", "product", "how", "short"),
    [
        # The barcode's product; the article's with the brand; the one whose name has
        # the line's words: linked the short way ...
        (("Болт М8х40 оцинк.", "Зубр"), ("Болт М8х40 оцинкованный", "ЗУБР"), 1, True),
        (("Болт М8х40", "Зубр", "ZB-840"), ("Болт М8х40", "Зубр", "zb 840"), 2, True),
        (("БОЛТ оцинк. M8*40", ""), ("Болт М8х40 оцинкованный", "Зубр"), 0, True),
        # ... and where that product may not be linked automatically, the full way: a
        # size or a brand that differs, an article without a brand, other words.
        (("Болт М8х50 оцинк.", "Зубр"), ("Болт М8х40 оцинкованный", "Зубр"), 1, False),
        (("Болт М8х40", "Kraft", "ZB-840"), ("Болт М8х40", "Зубр", "zb 840"), 2, False),
        (("Болт М8х40", "", "ZB-840"), ("Болт М8х40", "Зубр", "zb 840"), 2, False),
        (("Болт М8х40 DIN 933", ""), ("Болт М8х40 оцинкованный", ""), 0, False),
    ],
)
@pytest.mark.parametrize("thresholds", [Thresholds(auto=0.9, review=0.6), Thresholds(1.0, 0.95)])
def test_a_line_one_product_was_found_for_is_decided_as_the_full_way_decides_it(
    line, product, how, short, thresholds, monkeypatch
):
    from products import linking

    line, _ = _compared(*line, barcodes=["4600000000017"] if how == 1 else [])
    _, keyed = _compared(*product)
    products = {7: keyed}
    weighing = linking.Weights({}, 1000)

    def decided() -> tuple:
        d = linking.decide(line, {7: how}, products, weighing, thresholds, set())
        candidates = [(c.product_id, c.kind, c.score, c.matched, c.differed) for c in d.candidates]
        return d.product_id, d.kind, d.confidence, d.state, candidates

    shortly = decided()
    linked = linking._one_linked(line, {7: how}, products, weighing, thresholds)
    assert (linked is not None) == short
    monkeypatch.setattr(linking, "_one_linked", lambda *args: None)
    assert shortly == decided()
    if short:
        assert shortly[3] == State.AUTO


def test_the_keys_plan_holds_only_for_the_statements_within():
    from products.linking import _by_key

    def shown() -> list[str]:
        return [_show(f"SHOW enable_{method}") for method in ("seqscan", "mergejoin", "hashjoin")]

    with transaction.atomic(), connection.cursor() as cursor:
        with _by_key(cursor):
            assert shown() == ["off", "off", "off"]
        assert shown() == ["on", "on", "on"]
    assert shown() == ["on", "on", "on"]


def _show(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_the_ids_bitmap_holds_the_ids_wanted_as_postgresql_reads_it():
    from products.linking import _bitmap

    wanted = {0, 1, 7, 8, 9, 255, 1_000_003, 40_000_000}
    top, bitmap = _bitmap(wanted)
    tried = sorted(wanted | {2, 6, 10, 254, 256, 1_000_002, 1_000_004, 39_999_999})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i FROM unnest(%s::bigint[]) i WHERE CASE WHEN i >= 0 AND i < %s"
            " THEN get_bit(%s::bytea, i) = 1 END ORDER BY i",
            [[*tried, top, top + 8, -1], top, bitmap],
        )
        assert [i for (i,) in cursor.fetchall()] == sorted(wanted)
    assert top == 40_000_001 and len(bitmap) == 5_000_001


def test_the_brands_and_the_keyed_count_are_kept_with_the_keys(catalogue):
    def kept() -> tuple[set[str], int]:
        return set(KnownBrand.objects.values_list("brand", flat=True)), keys.keyed_total()

    keys.keys_refresh()
    assert kept() == ({"Зубр", "Лакра", "Bosch"}, 5)

    # Written since the refresh: read as they are now, until the next refresh keeps them.
    Product.objects.filter(brand="Bosch").update(retired_at=Now(), updated_at=Now())
    products([("OWN-6", "Дюбель 8х40", "Fischer", "", [])])
    assert set(keys.known_brands()) >= {"fischer"} and "bosch" not in keys.known_brands()
    assert keys.keyed_total() == 5  # the retired one keeps its key until the refresh

    keys.keys_refresh()
    assert kept() == ({"Зубр", "Лакра", "Fischer"}, 5)
    # A product deleted (its key with it) leaves no key to redo, and is counted out.
    Product.objects.filter(own_code="OWN-6").delete()
    assert keys.keys_refresh() == 0
    assert kept() == ({"Зубр", "Лакра"}, 4)


@pytest.mark.parametrize("bitmap_bytes", [32 * 2**20, 0])
def test_the_candidates_keys_are_read_whether_their_ids_fit_a_bitmap_or_not(
    mailbox, catalogue, monkeypatch, bitmap_bytes
):
    from products import linking

    monkeypatch.setattr(linking, "BITMAP_BYTES", bitmap_bytes)
    config = factories.create_config(mailbox)
    match(
        config,
        [
            ("A1", "что-то совсем другое", "", "", ["4600000000017"]),
            ("A2", "БОЛТ оцинк. M8*40 DIN933 уп.100шт Зубр", "", "", []),
            ("A3", "Эмаль ПФ-115 зеленая 0,9 кг Лакра", "", "", []),
        ],
    )
    assert (link_of(config, "A1").product, link_of(config, "A2").product) == (
        catalogue["OWN-1"],
        catalogue["OWN-1"],
    )
    # The enamel in a colour we do not carry: both ours are candidates, neither linked.
    assert link_of(config, "A3") is None or link_of(config, "A3").state == State.PROPOSED
    assert {
        c.product.own_code for c in LinkCandidate.objects.filter(config=config, supplier_sku="A3")
    } >= {"OWN-3", "OWN-4"}
