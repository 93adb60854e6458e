"""The role groups again: viewers see our products, supplier links (with their history)
and link candidates; operators review links (products.review_supplierlink) and add a
product made from a supplier line (products.add_product)."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0008_products"),
        ("products", "0003_review_permission"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
