"""A config's lines matched outside a transaction run as parts side by side, each its
own transaction on its own connection with the advisory locks of its SKUs' buckets: the
parts link as one transaction would, ``links.changed`` is announced once, after them,
and a part whose lines another matching holds waits for it while the others go on."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import OperationalError, connection

from core.parts import shares
from devkit import catalogue_set
from outbox.models import OutboxEvent
from products import linking
from products.events import LINKS_CHANGED
from products.models import LinkCandidate, LinkEvent, Product, SupplierLink
from tests import factories
from tests.integration.support import database_url

from .lines import accepted_import, products

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listed(mailbox):
    """Our catalogue and one supplier's list of devkit.catalogue_set's data set, stored
    as an accepted import: (config, import)."""
    catalogue, lists = catalogue_set.data_set(600, seed=7)
    products((p.own_code, p.name, p.spec.brand, p.article, [p.barcode]) for p in catalogue)
    lines = next(iter(lists.values()))
    config = factories.create_config(mailbox, name="Ромашка")
    price_import = accepted_import(
        config,
        ((x.sku, x.name, x.brand, x.article, [x.barcode] if x.barcode else []) for x in lines),
    )
    return config, price_import


def _buckets(config) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT e.sku, {linking.SKU_BUCKET} FROM pricefeed_priceitem e"
            " WHERE e.config_id = %s AND e.valid_to IS NULL",
            [config.pk],
        )
        return dict(cursor.fetchall())


def _links(config) -> dict[str, tuple]:
    return {
        link.supplier_sku: (link.product_id, link.state, link.kind, link.confidence)
        for link in SupplierLink.objects.filter(config=config)
    }


def _candidates(config) -> set[tuple]:
    return set(
        LinkCandidate.objects.filter(config=config).values_list(
            "supplier_sku", "product_id", "kind", "score", "rank"
        )
    )


def _announced(config) -> int:
    return OutboxEvent.objects.filter(kind=LINKS_CHANGED, payload__config_id=config.pk).count()


def _matching(config, price_import) -> tuple[threading.Thread, dict[str, object]]:
    """The config's import matched in two parts, in a thread: the thread, and where its
    outcome ("done") or exception ("error") is put."""
    result: dict[str, object] = {}

    def match() -> None:
        try:
            result["done"] = linking.links_match(
                config_id=config.pk, import_id=price_import.pk, parts=2
            )
        except BaseException as exc:  # reported by the caller
            result["error"] = exc
        finally:
            connection.close()

    worker = threading.Thread(target=match)
    worker.start()
    return worker, result


def _waiting_for_a_lock() -> None:
    """Returns once a session of this database waits for an advisory lock (a part for
    its buckets)."""
    deadline = time.monotonic() + 60
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
                " WHERE l.locktype = 'advisory' AND NOT l.granted"
                " AND d.datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return
        assert time.monotonic() < deadline, "no part waits for its lines' lock"
        time.sleep(0.05)


def _holding(config, buckets) -> psycopg.Connection:
    """Another transaction holding these buckets of the config's lines, as a matching's
    part does until it commits."""
    holder = psycopg.connect(database_url().replace("postgres://", "postgresql://", 1))
    holder.execute(linking.LOCK_SQL, [config.pk, sorted(buckets)])
    return holder


def test_the_parts_link_as_one_transaction_does(listed, no_queue):
    config, price_import = listed
    buckets = _buckets(config)
    assert {bucket % 3 for bucket in buckets.values()} == {0, 1, 2}  # every part has lines
    outcome = linking.links_match(config_id=config.pk, import_id=price_import.pk, parts=3)
    assert outcome.lines == len(buckets)
    assert outcome.linked and outcome.proposed, outcome
    links, candidates = _links(config), _candidates(config)
    assert outcome.linked + outcome.proposed == len(links)
    # Each part's links written by a transaction of its own; the event once, after them.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT xmin::text) FROM products_supplierlink WHERE config_id = %s",
            [config.pk],
        )
        assert cursor.fetchone()[0] == 3
    assert _announced(config) == 1

    # The same lines matched in one transaction give the same links and candidates.
    LinkEvent.objects.filter(link__config=config).delete()
    SupplierLink.objects.filter(config=config).delete()
    LinkCandidate.objects.filter(config=config).delete()
    linking.links_match(config_id=config.pk, import_id=price_import.pk, parts=1)
    assert _links(config) == links
    assert _candidates(config) == candidates

    # And the parts again change nothing.
    again = linking.links_match(config_id=config.pk, import_id=price_import.pk, parts=3)
    assert again.changed == 0
    assert _links(config) == links
    assert _announced(config) == 3


def test_a_part_waits_for_its_lines_while_the_others_go_on(listed, no_queue):
    config, price_import = listed
    buckets = _buckets(config)
    waiting = {sku for sku, bucket in buckets.items() if bucket % 2 == 1}
    assert waiting and waiting != set(buckets)
    # Another matching of the config holds the buckets of part 1 (as it would, mid-way,
    # until it commits).
    holder = _holding(config, shares(linking.SKU_BUCKETS, 2)[1])
    worker, result = _matching(config, price_import)
    try:
        deadline = time.monotonic() + 60
        while not SupplierLink.objects.filter(config=config).exists():
            assert time.monotonic() < deadline, "part 0 did not commit"
            time.sleep(0.05)
        # Part 0 committed all of its lines at once; part 1 waits for the lock, and
        # nothing is announced before it is done.
        assert not set(_links(config)) & waiting
        assert worker.is_alive()
        assert _announced(config) == 0
    finally:
        holder.rollback()
        holder.close()
        worker.join(60)
    assert not worker.is_alive() and "error" not in result, result
    assert set(_links(config)) & waiting
    assert _announced(config) == 1


def test_a_part_that_fails_leaves_the_others_done_and_a_second_run_completes(
    listed, no_queue, monkeypatch
):
    config, price_import = listed
    buckets = _buckets(config)
    failing = {sku for sku, bucket in buckets.items() if bucket % 2 == 1}
    match = linking.lines_match

    def lines_match(config_id, lines, thresholds=None):
        if any(line.sku in failing for line in lines):
            raise RuntimeError("the database went away")
        return match(config_id, lines, thresholds)

    monkeypatch.setattr(linking, "lines_match", lines_match)
    with pytest.raises(RuntimeError):
        linking.links_match(config_id=config.pk, import_id=price_import.pk, parts=2)
    # Part 0 committed; part 1 wrote nothing; nothing was announced (the import's event
    # is retried).
    assert set(_links(config)) and not set(_links(config)) & failing
    assert _announced(config) == 0

    monkeypatch.setattr(linking, "lines_match", match)
    again = linking.links_match(config_id=config.pk, import_id=price_import.pk, parts=2)
    assert set(_links(config)) & failing
    assert again.changed == len(set(_links(config)) & failing)  # part 0's lines unchanged
    assert _announced(config) == 1


def test_a_persons_new_link_waits_for_the_matching_of_its_line(listed, no_queue, tmp_path):
    from django.contrib.auth.models import User

    from products import links_transfer, review

    config, _import = listed
    sku, bucket = next(iter(_buckets(config).items()))
    product = Product.objects.order_by("pk").first()
    user = User.objects.create_user("operator")
    path = tmp_path / "links.csv"
    path.write_text(
        "config;supplier_sku;own_code;state;kind;confidence\n"
        f"{config.pk};{sku};{product.own_code};;;\n"
    )
    holder = _holding(config, [bucket])
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '300ms'")
        for write in (
            lambda: review.link_choose(
                line=review.Line(config.pk, sku), product_id=product.pk, user=user
            ),
            lambda: links_transfer.links_import(path, user=user),
        ):
            with pytest.raises(OperationalError, match="lock timeout"):
                write()
        assert not SupplierLink.objects.filter(config=config, supplier_sku=sku).exists()
    finally:
        holder.rollback()
        holder.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    review.link_choose(line=review.Line(config.pk, sku), product_id=product.pk, user=user)
    assert SupplierLink.objects.get(config=config, supplier_sku=sku).product == product


def test_a_matching_keeps_a_link_a_person_made_while_it_waited(listed, no_queue):
    config, price_import = listed
    sku, bucket = next(iter(_buckets(config).items()))
    product = Product.objects.order_by("-pk").first()
    # A person's link of the line, not committed yet, made holding the line's lock.
    holder = _holding(config, [bucket])
    holder.execute(
        "INSERT INTO products_supplierlink (config_id, supplier_sku, product_id, kind,"
        " confidence, state) VALUES (%s, %s, %s, 'manual', 1, 'confirmed')",
        (config.pk, sku, product.pk),
    )
    worker, result = _matching(config, price_import)
    _waiting_for_a_lock()  # the part with the line's bucket
    holder.commit()
    holder.close()
    worker.join(60)
    assert not worker.is_alive() and "error" not in result, result
    link = SupplierLink.objects.get(config=config, supplier_sku=sku)
    assert (link.product_id, link.state, link.kind) == (product.pk, "confirmed", "manual")
    assert SupplierLink.objects.filter(config=config).count() > 1
