"""PriceItem's key becomes (import id << 32) + row number; its price_import index goes.

Existing items get their new keys here (row numbers are unique within an import).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pricefeed', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='priceitem',
            name='id',
            field=models.BigIntegerField(editable=False, primary_key=True, serialize=False),
        ),
        migrations.RunSQL(
            "UPDATE pricefeed_priceitem SET id = price_import_id * 4294967296 + row_number",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name='priceitem',
            name='price_import',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='items', to='pricefeed.priceimport'),
        ),
    ]
