"""The role groups again: viewers see the catalogue (pricefeed.CatalogueEntry);
operators approve or reject held imports (pricefeed.review_priceimport) and make API
tokens of their own (api.ApiToken)."""

import importlib

from django.db import migrations

from access.roles import roles_apply


def groups_update(apps, schema_editor):
    roles = importlib.import_module("access.migrations.0001_roles")
    roles.permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0004_overdue_alerts"),
        ("pricefeed", "0008_catalogue"),
        ("api", "0001_api_tokens"),
    ]

    operations = [
        migrations.RunPython(groups_update, migrations.RunPython.noop),
    ]
