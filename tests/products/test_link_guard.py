"""A supplier link names a product and a config that exist, as a foreign key would hold
it (migration 0008's statement triggers): a link to what is not there is refused, and a
product or config is not deleted from under a link, also while the link is being
written in another transaction."""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction

from products.models import Product, SupplierLink
from tests.factories import create_config, create_mailbox
from tests.integration.support import database_url

pytestmark = pytest.mark.django_db(transaction=True)

INSERT_LINK = (
    "INSERT INTO products_supplierlink (config_id, supplier_sku, product_id, kind, confidence,"
    " state) VALUES (%s, %s, %s, 'manual', 1, 'confirmed')"
)


@pytest.fixture
def config():
    return create_config(create_mailbox(name="guard"), name="Поставщик")


@pytest.fixture
def product():
    return Product.objects.create(own_code="P-1", name="Болт М8х40")


def session(isolation: str = "read committed") -> psycopg.Connection:
    """A connection of its own (another worker), in a transaction of ``isolation`` with a
    short lock timeout: a statement that would wait on another transaction fails."""
    conn = psycopg.connect(database_url().replace("postgres://", "postgresql://", 1))
    conn.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
    conn.execute("SET lock_timeout = '300ms'")
    return conn


def new_link(config, product, sku="A-1") -> SupplierLink:
    return SupplierLink(
        config=config, supplier_sku=sku, product=product, kind="manual", confidence=1,
        state="confirmed",
    )  # fmt: skip


@pytest.mark.parametrize("isolation", ["read committed", "repeatable read"])
def test_a_link_to_a_product_or_config_there_is_not_is_refused(config, product, isolation):
    for config_id, product_id in ((config.pk, product.pk + 1000), (config.pk + 1000, product.pk)):
        with session(isolation) as conn, pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute(INSERT_LINK, (config_id, "A-1", product_id))

    with session(isolation) as conn:
        conn.execute(INSERT_LINK, (config.pk, "A-1", product.pk))
    link = SupplierLink.objects.get()
    with pytest.raises(IntegrityError, match="product there is not"):
        with transaction.atomic():
            SupplierLink.objects.filter(pk=link.pk).update(product_id=product.pk + 1000)
    assert SupplierLink.objects.get().product_id == product.pk


def test_a_linked_product_or_config_is_not_deleted_even_bypassing_django(config, product):
    unlinked = Product.objects.create(own_code="P-2", name="Гайка М8")
    new_link(config, product).save()

    targets = (("products_product", product.pk), ("pricefeed_pricelistconfig", config.pk))
    with connection.cursor() as cursor:
        for table, pk in targets:
            with pytest.raises(IntegrityError, match="being deleted"), transaction.atomic():
                cursor.execute(f"DELETE FROM {table} WHERE id = %s", [pk])
        cursor.execute("DELETE FROM products_product WHERE id = %s", [unlinked.pk])

    assert Product.objects.filter(pk=product.pk).exists()
    assert not Product.objects.filter(pk=unlinked.pk).exists()
    # Django deletes a config's links with it (on_delete CASCADE) before the config.
    config.delete()
    assert not SupplierLink.objects.exists()


def test_a_delete_waits_for_a_link_being_written_then_is_refused(config, product):
    writer, deleter = session(), session()
    writer.execute(INSERT_LINK, (config.pk, "A-1", product.pk))  # not committed yet

    with pytest.raises(psycopg.errors.LockNotAvailable):
        deleter.execute("DELETE FROM products_product WHERE id = %s", (product.pk,))
    deleter.rollback()
    writer.commit()
    with pytest.raises(psycopg.errors.ForeignKeyViolation, match="being deleted"):
        deleter.execute("DELETE FROM products_product WHERE id = %s", (product.pk,))

    writer.close()
    deleter.close()
    assert SupplierLink.objects.get().product_id == product.pk


def test_a_link_written_while_its_product_is_deleted_waits_then_is_refused(config, product):
    writer, deleter = session(), session()
    deleter.execute("DELETE FROM products_product WHERE id = %s", (product.pk,))  # not committed

    with pytest.raises(psycopg.errors.LockNotAvailable):
        writer.execute(INSERT_LINK, (config.pk, "A-1", product.pk))
    writer.rollback()
    deleter.commit()
    with pytest.raises(psycopg.errors.ForeignKeyViolation, match="product there is not"):
        writer.execute(INSERT_LINK, (config.pk, "A-1", product.pk))

    writer.close()
    deleter.close()
    assert not SupplierLink.objects.exists()


def test_products_are_deleted_in_read_committed_only(product):
    with session("repeatable read") as conn:
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="READ COMMITTED"):
            conn.execute("DELETE FROM products_product WHERE id = %s", (product.pk,))
    assert Product.objects.filter(pk=product.pk).exists()
