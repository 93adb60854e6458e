"""The brands of the active products (KnownBrand) and how many products have keys
(MatchVersion "keyed"), kept by keys_refresh with the keys; filled here as they are now
(a refresh that follows writes them again)."""

from django.db import migrations, models

KEEP = """
INSERT INTO products_knownbrand
SELECT DISTINCT brand FROM products_product WHERE retired_at IS NULL AND brand <> '';
INSERT INTO products_matchversion (name, value)
SELECT 'keyed', count(*) FROM products_productkey
ON CONFLICT (name) DO UPDATE SET value = excluded.value;
"""
FORGET = "DELETE FROM products_matchversion WHERE name = 'keyed'"


class Migration(migrations.Migration):

    dependencies = [
        ('products', '0008_links_guarded'),
    ]

    operations = [
        migrations.CreateModel(
            name='KnownBrand',
            fields=[
                ('brand', models.TextField(primary_key=True, serialize=False)),
            ],
            options={
                'default_permissions': (),
            },
        ),
        migrations.RunSQL(KEEP, FORGET),
    ]
