"""The matching's counters: how many products have each token (TokenCount, filled from
the tokens there are), and the catalogue's version, moved on by a statement trigger on
products_product, against which keys_refresh knows when nothing changed (MatchVersion).
MatchToken loses its second, identical index by product (the foreign key's own).
LinkEvent's and LinkCandidate's references lose their database constraints (the
matching writes them by the ten thousand; Django cascades and nulls them on delete)."""

import django.db.models.deletion
from django.db import migrations, models

# One row, made again if a flush emptied the table, its value from a sequence: a value
# is never given twice, also when the transaction that took it rolls back (a dry run).
# A statement that writes no row moves it on as well (a needless look for stale keys,
# never a missed one).
CATALOGUE_CHANGED = """
CREATE FUNCTION products_catalogue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO products_matchversion (name, value)
  VALUES ('catalogue', nextval('products_catalogue_version'))
  ON CONFLICT (name) DO UPDATE SET value = excluded.value;
  RETURN NULL;
END
$$
"""


class Migration(migrations.Migration):

    dependencies = [
        ('products', '0005_product_barcodes_unindexed'),
    ]

    operations = [
        migrations.CreateModel(
            name='MatchVersion',
            fields=[
                ('name', models.CharField(max_length=16, primary_key=True, serialize=False)),
                ('value', models.BigIntegerField()),
            ],
            options={
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='TokenCount',
            fields=[
                ('token', models.TextField(primary_key=True, serialize=False)),
                ('products', models.IntegerField()),
            ],
            options={
                'default_permissions': (),
            },
        ),
        migrations.AlterField(
            model_name='matchtoken',
            name='product',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='products.product'),
        ),
        migrations.AlterField(
            model_name='linkcandidate',
            name='config',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='pricefeed.pricelistconfig', verbose_name='config'),
        ),
        migrations.AlterField(
            model_name='linkcandidate',
            name='product',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='products.product', verbose_name='product'),
        ),
        migrations.AlterField(
            model_name='linkevent',
            name='link',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='products.supplierlink', verbose_name='link'),
        ),
        migrations.AlterField(
            model_name='linkevent',
            name='product_after',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='products.product', verbose_name='product after'),
        ),
        migrations.AlterField(
            model_name='linkevent',
            name='product_before',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='products.product', verbose_name='product before'),
        ),
        migrations.RunSQL(
            sql=[
                "INSERT INTO products_tokencount (token, products) "
                "SELECT token, count(*) FROM products_matchtoken GROUP BY token",
                "CREATE SEQUENCE products_catalogue_version",
                CATALOGUE_CHANGED,
                "CREATE TRIGGER products_catalogue_changed "
                "AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON products_product "
                "FOR EACH STATEMENT EXECUTE FUNCTION products_catalogue_changed()",
            ],
            reverse_sql=[
                "DROP TRIGGER products_catalogue_changed ON products_product",
                "DROP FUNCTION products_catalogue_changed()",
                "DROP SEQUENCE products_catalogue_version",
            ],
        ),
    ]
