"""Price items are keyed by (import, row): one index finds an import's items."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from devkit.samples import price_list_csv
from mailboxes.models import InboundMessage
from pricefeed.models import PriceImport, PriceItem, item_key
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")


def _two_imports(mailbox, config):
    first = run_all(receive(mailbox, [("a.csv", price_list_csv(ROWS))]))[0]
    second = run_all(receive(mailbox, [("b.csv", price_list_csv(ROWS[:2]))]))[0]
    return first, second


def test_items_are_keyed_by_import_and_row_and_found_by_that_range(mailbox, config):
    first, second = _two_imports(mailbox, config)
    items = list(PriceItem.objects.of_import(first.pk).order_by("pk"))
    assert [i.pk for i in items] == [item_key(first.pk, i.row_number) for i in items]
    assert [i.pk for i in items] == sorted(
        PriceItem.objects.filter(price_import=first).values_list("pk", flat=True)
    )
    assert PriceItem.objects.of_import(second.pk).count() == 2
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # as on a table of millions
        sql, params = PriceItem.objects.of_import(first.pk).query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "pricefeed_priceitem_pkey" in plan, plan


def test_row_numbers_past_the_key_range_are_refused():
    assert item_key(3, 2**32 - 1) == (4 << 32) - 1
    with pytest.raises(ValueError):
        item_key(3, 2**32)
    with pytest.raises(ValueError):
        item_key(3, -1)


def test_deleting_an_import_or_its_message_deletes_its_items_only(mailbox, config):
    first, second = _two_imports(mailbox, config)
    PriceImport.objects.filter(pk=first.pk).delete()
    assert not PriceItem.objects.filter(price_import_id=first.pk).exists()
    assert PriceItem.objects.of_import(second.pk).count() == 2
    InboundMessage.objects.filter(pk=second.message_id).delete()
    assert not PriceItem.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_items_their_keys(mailbox):
    executor = MigrationExecutor(connection)
    before = [("pricefeed", "0001_initial")]
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        Item = old.get_model("pricefeed", "PriceItem")
        Import = old.get_model("pricefeed", "PriceImport")
        Config = old.get_model("pricefeed", "PriceListConfig")
        Message = old.get_model("mailboxes", "InboundMessage")
        config = Config.objects.create(mailbox_id=mailbox.pk, name="c")
        imports = []
        for n in range(2):
            message = Message.objects.create(
                mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1, uid=n + 1, dedup_key=str(n)
            )
            imports.append(
                Import.objects.create(
                    message=message, config=config, attachment_key="part2", filename="p"
                ).pk
            )
        for i, import_id in enumerate(imports * 2):
            Item.objects.create(
                price_import_id=import_id, sku=f"S{i}", row_number=10 + i, currency="RUB"
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        # Through 0002_price_item_key and on to the latest migrations, which the tests
        # after this one need.
        executor.migrate(executor.loader.graph.leaf_nodes())
    keys = sorted(PriceItem.objects.values_list("pk", "price_import_id", "row_number"))
    assert keys == sorted((item_key(imp, row), imp, row) for _, imp, row in keys)
    assert {imp for _, imp, _ in keys} == set(imports) and len(keys) == 4
