"""The role groups again, now that the overdue-list alerts and their notifications (and
their view permissions) exist."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0003_audit_records_kept"),
        ("pricefeed", "0007_expected_schedule"),
        ("notifications", "0003_overdue_notifications"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
