"""The role groups again: viewers see webhooks, RabbitMQ targets and deliveries
(delivery 0001); operators retry deliveries; administrators keep the endpoints."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0012_offers_prices"),
        ("delivery", "0001_endpoints_and_deliveries"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
