"""A price's audit is kept as typed columns (pricing 0007): the migration moves each
audit of the JSON it was kept in into them, and ProductPrice.audit tells it as the
JSON did."""

from __future__ import annotations

import json
from decimal import Decimal as D

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from pricing import offers
from pricing.models import PriceRule, ProductPrice
from tests.pricing.test_offers import held_world

BEFORE = [("pricing", "0006_offer_best_unindexed")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_each_audit_into_its_columns(no_queue):
    world = held_world()
    operator = get_user_model().objects.create_user("operator")
    bolt = ProductPrice.objects.get(product=world.bolt)
    offers.price_approve(world.bolt.pk, computed=bolt.computed, user=operator)
    # The nut's price with every step of a rule: a fixed add and a floor that raises it.
    PriceRule.objects.update(fixed_add=D("7.50"), min_margin_percent=D(90), hold_percent=None)
    offers.offers_refresh([world.nut.pk])
    audits = {p.product_id: p.audit for p in ProductPrice.objects.all()}
    assert audits[world.bolt.pk]["approved_by"] == "operator"
    assert [s[0] for s in audits[world.nut.pk]["steps"]] == [
        "cost", "markup", "add", "floor", "round",
    ]  # fmt: skip
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            for product_id, audit in audits.items():
                cursor.execute(
                    "UPDATE pricing_productprice SET audit = %s::jsonb WHERE product_id = %s",
                    [json.dumps(audit), product_id],
                )
            # An approval the audit no longer names: the price was computed again since.
            cursor.execute(
                "UPDATE pricing_productprice SET approved_by_id = %s WHERE product_id = %s",
                [operator.pk, world.nut.pk],
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    moved = {p.product_id: p for p in ProductPrice.objects.select_related("approved_by")}
    assert {product_id: p.audit for product_id, p in moved.items()} == audits
    assert moved[world.bolt.pk].approved_by == operator
    assert moved[world.nut.pk].approved_by is None
    # The nut's price computed again from the same inputs: nothing differs, nothing is
    # written.
    offers.offers_refresh([world.nut.pk])
    assert (
        ProductPrice.objects.get(product=world.nut).computed_at == moved[world.nut.pk].computed_at
    )
