"""The role groups of access/roles.py, with their permissions."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from access.roles import roles_apply, roles_remove


def permissions_create(apps, schema_editor):
    """Creates the permissions of every model now: Django makes them in post_migrate,
    after all migrations, and the groups below need them first."""
    for app_config in apps.get_app_configs():
        app_config.models_module = True  # create_permissions skips an app without models
        create_permissions(
            app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias
        )
        app_config.models_module = None


def groups_create(apps, schema_editor):
    permissions_create(apps, schema_editor)
    roles_apply(apps=apps, using=schema_editor.connection.alias)


def groups_delete(apps, schema_editor):
    roles_remove(apps=apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
        ("mailboxes", "0005_access_and_connection_test"),
        ("outbox", "0002_permissions"),
        ("pricefeed", "0004_sender_auth_and_permissions"),
        ("notifications", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(groups_create, groups_delete),
    ]
