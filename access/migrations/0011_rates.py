"""The role groups again: viewers see rates, the bank's rate fetches and suppliers'
terms (pricing 0001); operators enter manual rates and keep suppliers' terms."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0010_price_types"),
        ("pricing", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
