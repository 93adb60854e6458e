"""The role groups again: viewers see the price types (pricefeed 0014), operators keep
them."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0009_product_links"),
        ("pricefeed", "0016_item_extras"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
