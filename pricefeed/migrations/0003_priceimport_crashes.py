"""Counts the runs that ended with their worker process (core.claims.ClaimedWork.crashed).

A constant default: PostgreSQL adds the column without rewriting the table."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pricefeed', '0002_price_item_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='priceimport',
            name='crashes',
            field=models.PositiveSmallIntegerField(db_default=0, default=0),
        ),
    ]
