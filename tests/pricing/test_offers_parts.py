"""A supplier's refresh outside a transaction runs as parts side by side, each its own
transaction on its own connection with the advisory locks of its products' buckets:
the parts decide as one transaction would, and a part whose products another refresh
holds waits for it while the others go on."""

from __future__ import annotations

import random
import threading
import time

import psycopg
import pytest
from django.db import connection

from core.parts import shares
from outbox.models import OutboxEvent
from pricing import offers
from pricing.models import ProductPrice
from products.models import SupplierLink
from tests.integration.support import database_url

from .test_rules_agree import _check, _world

pytestmark = pytest.mark.django_db(transaction=True)


def _buckets(product_ids: list[int]) -> dict[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT product_id, {offers.BUCKET} FROM unnest(%s::bigint[]) product_id",
            [product_ids],
        )
        return dict(cursor.fetchall())


def _configs() -> list[int]:
    return sorted(set(SupplierLink.objects.values_list("config_id", flat=True)))


def _spread_world(rng: random.Random) -> list[int]:
    """The world of the rules' test, each product in a block of ids of its own (and so
    in every bucket in turn: a product's bucket is its block's)."""
    return _world(rng, id_step=offers.BUCKET_IDS)


def test_a_products_bucket_is_its_block_of_ids_dealt_out_in_turn(db):
    size, buckets = offers.BUCKET_IDS, offers.LOCK_BUCKETS
    found = _buckets([1, size - 1, size, 2 * size + 5, buckets * size, (buckets + 3) * size])
    assert list(found.values()) == [0, 0, 1, 2, 0, 3]


def test_the_parts_decide_as_one_transaction_does(no_queue):
    product_ids = _spread_world(random.Random(3))
    buckets = _buckets(product_ids)
    assert {bucket % 3 for bucket in buckets.values()} == {0, 1, 2}  # every part has work
    for n, config_id in enumerate(_configs()):
        before = set(OutboxEvent.objects.values_list("id", flat=True))
        offers.config_offers_refresh(config_id, parts=3)
        made = OutboxEvent.objects.filter(kind=offers.PRICE_CHANGED).exclude(id__in=before)
        announced = [item["product_id"] for event in made for item in event.payload["items"]]
        # No product announced twice, only the config's products, and each part's events
        # written by a transaction of its own (the first list: every part has prices).
        assert len(announced) == len(set(announced))
        assert set(announced) <= set(
            SupplierLink.objects.filter(config_id=config_id).values_list("product_id", flat=True)
        )
        parts = {buckets[product] % 3 for product in announced}
        assert n or len(parts) == 3
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(DISTINCT xmin::text) FROM outbox_outboxevent WHERE id = ANY (%s)",
                [[event.id for event in made]],
            )
            assert cursor.fetchone()[0] == len(parts)
    seen = _check(product_ids, {})
    assert seen["best"] and seen["published"], seen
    # One transaction over everything agrees with what the parts wrote.
    again = offers.offers_refresh(product_ids)
    assert (again.best_changed, again.published_changed) == (0, 0)


def test_a_part_waits_for_its_products_while_the_others_go_on(no_queue):
    product_ids = _spread_world(random.Random(4))
    buckets = _buckets(product_ids)
    config_id = _configs()[0]
    linked = set(
        SupplierLink.objects.filter(config_id=config_id).values_list("product_id", flat=True)
    )
    waiting = {p for p in linked if buckets[p] % 2 == 1}
    going = linked - waiting
    assert waiting and going
    # Another refresh holds the buckets of part 1 (as it would, mid-way, until it commits).
    holder = psycopg.connect(database_url().replace("postgres://", "postgresql://", 1))
    with holder.cursor() as cursor:
        cursor.execute(offers.LOCK_SQL, [shares(offers.LOCK_BUCKETS, 2)[1]])
    result: dict[str, object] = {}

    def refresh() -> None:
        try:
            result["done"] = offers.config_offers_refresh(config_id, parts=2)
        except BaseException as exc:  # reported below
            result["error"] = exc

    worker = threading.Thread(target=refresh)
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while set(ProductPrice.objects.values_list("product_id", flat=True)) != going:
            assert time.monotonic() < deadline, "part 0 did not commit"
            time.sleep(0.05)
        assert worker.is_alive()  # part 1 waits for the lock
    finally:
        holder.rollback()
        holder.close()
        worker.join(60)
    assert not worker.is_alive() and "error" not in result, result
    assert set(ProductPrice.objects.values_list("product_id", flat=True)) == linked
