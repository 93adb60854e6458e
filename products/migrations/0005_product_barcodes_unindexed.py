"""Product.barcodes loses its GIN index: no query's plan used it (matching finds
products by barcode through its own tokens; the admin's search ORs the barcode with a
name substring and scans either way), and maintaining it cost a 1M-product load most of
its time (products_load, docs/benchmarks.md)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('products', '0004_machinery_without_permissions'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='product',
            name='product_barcodes',
        ),
    ]
