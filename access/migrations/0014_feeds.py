"""The role groups again: viewers see feeds, customer groups and their mailings (feeds
0001); operators keep feeds and customer groups and issue feeds' tokens."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0013_event_delivery"),
        ("feeds", "0001_feeds_and_customer_lists"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
