"""The catalogue moves into the items table: an entry is an item that became current
(PriceItem.config, valid_from, valid_to, ended_by), read through the view
pricefeed_catalogueentry. A config's first list is then made current as it is COPYed,
instead of being written a second time (bench/parse.py)."""

import django.db.models.deletion
from django.db import migrations, models

VIEW = """
    CREATE VIEW pricefeed_catalogueentry AS
    SELECT id, config_id, sku, name, price, currency, quantity, price_import_id,
           row_number, valid_from, valid_to, ended_by_id
    FROM pricefeed_priceitem WHERE valid_from IS NOT NULL
"""


def entries_into_items(apps, schema_editor):
    """Each entry was made from its import's row: the item with the key (import, row)."""
    moved = """
        UPDATE pricefeed_priceitem SET config_id = e.config_id, valid_from = e.valid_from,
               valid_to = e.valid_to, ended_by_id = e.ended_by_id
        FROM pricefeed_catalogueentry e
        WHERE pricefeed_priceitem.id = e.price_import_id * 4294967296 + e.row_number
    """
    schema_editor.execute(moved)


class Migration(migrations.Migration):

    dependencies = [
        ("pricefeed", "0008_catalogue"),
    ]

    operations = [
        migrations.AddField(
            model_name="priceitem",
            name="config",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="pricefeed.pricelistconfig",
                verbose_name="config",
            ),
        ),
        migrations.AddField(
            model_name="priceitem",
            name="valid_from",
            field=models.DateTimeField(blank=True, null=True, verbose_name="current from"),
        ),
        migrations.AddField(
            model_name="priceitem",
            name="valid_to",
            field=models.DateTimeField(blank=True, null=True, verbose_name="current until"),
        ),
        migrations.AddField(
            model_name="priceitem",
            name="ended_by",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="pricefeed.priceimport",
                verbose_name="ended by import",
            ),
        ),
        migrations.RunPython(entries_into_items, migrations.RunPython.noop, elidable=True),
        # The table goes with its index names, which the items' indexes take.
        migrations.DeleteModel(name="CatalogueEntry"),
        migrations.AddConstraint(
            model_name="priceitem",
            constraint=models.UniqueConstraint(
                condition=models.Q(valid_from__isnull=False),
                fields=("config", "sku", "valid_to"),
                name="one_current_entry_per_sku",
                nulls_distinct=False,
            ),
        ),
        migrations.AddIndex(
            model_name="priceitem",
            index=models.Index(
                condition=models.Q(valid_to__isnull=False),
                fields=["config", "valid_to"],
                name="catalogue_ended",
            ),
        ),
        migrations.CreateModel(
            name="CatalogueEntry",
            fields=[
                ("id", models.BigIntegerField(editable=False, primary_key=True, serialize=False)),
                ("sku", models.CharField(max_length=255, verbose_name="sku")),
                ("name", models.TextField(blank=True, verbose_name="name")),
                (
                    "price",
                    models.DecimalField(
                        blank=True, decimal_places=4, max_digits=18, null=True, verbose_name="price"
                    ),
                ),
                ("currency", models.CharField(blank=True, max_length=10, verbose_name="currency")),
                (
                    "quantity",
                    models.DecimalField(
                        blank=True,
                        decimal_places=4,
                        max_digits=18,
                        null=True,
                        verbose_name="quantity",
                    ),
                ),
                ("row_number", models.PositiveIntegerField(verbose_name="row")),
                ("valid_from", models.DateTimeField(verbose_name="current from")),
                (
                    "valid_to",
                    models.DateTimeField(blank=True, null=True, verbose_name="current until"),
                ),
                (
                    "config",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="catalogue",
                        to="pricefeed.pricelistconfig",
                        verbose_name="config",
                    ),
                ),
                (
                    "ended_by",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="pricefeed.priceimport",
                        verbose_name="ended by import",
                    ),
                ),
                (
                    "price_import",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="catalogue_entries",
                        to="pricefeed.priceimport",
                        verbose_name="set by import",
                    ),
                ),
            ],
            options={
                "verbose_name": "catalogue entry",
                "verbose_name_plural": "catalogue",
                "db_table": "pricefeed_catalogueentry",
                "ordering": ["config", "sku", "-valid_from"],
                "managed": False,
            },
        ),
        migrations.RunSQL(VIEW, "DROP VIEW pricefeed_catalogueentry"),
    ]
