"""The review queue's permission: products.review_supplierlink (confirm, reject and
choose a supplier line's product)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('products', '0002_match_keys'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='supplierlink',
            options={'permissions': [('review_supplierlink', 'Can confirm, reject and choose supplier links')], 'verbose_name': 'supplier link', 'verbose_name_plural': 'supplier links'},
        ),
    ]
