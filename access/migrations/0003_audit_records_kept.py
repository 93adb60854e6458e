"""The role groups again: no group deletes the audit records any more (received
messages, imports, notifications); only superusers do (core.adminutils)."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0002_process_heartbeats"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
