"""The config and the product of a supplier link held by statement triggers instead of
foreign keys (LINK_TARGETS_GUARD), and LinkEvent's product_before indexed only where it
is set.

A foreign key checked each inserted link at commit on its own, locking the product's row
(FOR KEY SHARE): with a matching's tens of thousands of links, a tenth of its time and,
after a checkpoint, a whole page of WAL for each product row locked. The triggers check a
statement's links in one join instead. What the row locks guarded against, a product or
config deleted while a link to it is being written, an advisory lock does: each link
write holds it shared until its transaction ends, and a delete of products or configs
takes it exclusively, waiting for the link writes under way, and then finds whether a
link names what it deletes. The check reads what is committed (READ COMMITTED, Django's
isolation); a link written in a stricter isolation locks its product and config rows as
the foreign key did, and products or configs are deleted only in READ COMMITTED.
(TRUNCATE is not guarded: nothing in pricefeed truncates products or configs.)
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


# The advisory lock's key is two ints, as products.linking's bucket locks are, its first
# another string's hash than theirs.
LINK_TARGETS_GUARD = """
CREATE FUNCTION products_links_written() RETURNS trigger LANGUAGE plpgsql
  -- each written link looked up by key: the planner, not knowing how few of a million
  -- products a statement names, would read them all
  SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
BEGIN
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('products.link_targets'), 0);
  ELSE
    PERFORM FROM products_product p
     WHERE p.id IN (SELECT product_id FROM written) FOR KEY SHARE OF p;
    PERFORM FROM pricefeed_pricelistconfig c
     WHERE c.id IN (SELECT config_id FROM written) FOR KEY SHARE OF c;
  END IF;
  IF EXISTS (SELECT FROM written w
              WHERE NOT EXISTS (SELECT FROM products_product p WHERE p.id = w.product_id))
  THEN
    RAISE EXCEPTION 'a supplier link names a product there is not'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'products_supplierlink';
  END IF;
  IF EXISTS (SELECT FROM (SELECT DISTINCT config_id FROM written) w
              WHERE NOT EXISTS (SELECT FROM pricefeed_pricelistconfig c
                                 WHERE c.id = w.config_id))
  THEN
    RAISE EXCEPTION 'a supplier link names a price-list config there is not'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'products_supplierlink';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER supplierlink_inserted AFTER INSERT ON products_supplierlink
  REFERENCING NEW TABLE AS written
  FOR EACH STATEMENT EXECUTE FUNCTION products_links_written();
CREATE TRIGGER supplierlink_updated AFTER UPDATE ON products_supplierlink
  REFERENCING NEW TABLE AS written
  FOR EACH STATEMENT EXECUTE FUNCTION products_links_written();

CREATE FUNCTION products_link_targets_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION '% rows are deleted in READ COMMITTED only (the supplier links'' guard)',
      TG_TABLE_NAME USING ERRCODE = 'feature_not_supported';
  END IF;
  -- the link writes under way end first; later ones wait for this transaction
  PERFORM pg_advisory_xact_lock(hashtext('products.link_targets'), 0);
  IF TG_TABLE_NAME = 'products_product' THEN
    IF EXISTS (SELECT FROM gone g
                WHERE EXISTS (SELECT FROM products_supplierlink l WHERE l.product_id = g.id))
    THEN
      RAISE EXCEPTION 'a supplier link names a product being deleted'
        USING ERRCODE = 'foreign_key_violation', TABLE = 'products_supplierlink';
    END IF;
  ELSIF EXISTS (SELECT FROM gone g
                 WHERE EXISTS (SELECT FROM products_supplierlink l WHERE l.config_id = g.id))
  THEN
    RAISE EXCEPTION 'a supplier link names a price-list config being deleted'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'products_supplierlink';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER product_deleted AFTER DELETE ON products_product
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION products_link_targets_deleted();
CREATE TRIGGER config_deleted_links AFTER DELETE ON pricefeed_pricelistconfig
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION products_link_targets_deleted();
"""
NO_GUARD = """
DROP TRIGGER config_deleted_links ON pricefeed_pricelistconfig;
DROP TRIGGER product_deleted ON products_product;
DROP FUNCTION products_link_targets_deleted();
DROP TRIGGER supplierlink_updated ON products_supplierlink;
DROP TRIGGER supplierlink_inserted ON products_supplierlink;
DROP FUNCTION products_links_written();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('pricefeed', '0016_item_extras'),
        ('products', '0007_links_fewer_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # (first: the foreign keys are dropped with the guard already in place)
        migrations.RunSQL(LINK_TARGETS_GUARD, NO_GUARD),
        migrations.AlterField(
            model_name='linkevent',
            name='product_before',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='products.product', verbose_name='product before'),
        ),
        migrations.AlterField(
            model_name='supplierlink',
            name='config',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='product_links', to='pricefeed.pricelistconfig', verbose_name='config'),
        ),
        migrations.AlterField(
            model_name='supplierlink',
            name='product',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='links', to='products.product', verbose_name='product'),
        ),
        migrations.AddIndex(
            model_name='linkevent',
            index=models.Index(condition=models.Q(('product_before__isnull', False)), fields=['product_before'], name='linkevent_product_before'),
        ),
    ]
