"""Existing reasons, written as English before, become stored texts (a msgid and its
values): a notification's last error."""

from django.db import migrations
from django.db.models import Q

from core.legacy_texts import convert_rows, converted


def _notification(row):
    row.last_error_text = converted(row.last_error)


def forwards(apps, schema_editor):
    convert_rows(
        apps.get_model("notifications", "Notification"),
        reads=("last_error",),
        writes=("last_error_text",),
        convert=_notification,
        where=~Q(last_error=""),
    )


class Migration(migrations.Migration):
    dependencies = [("notifications", "0008_stored_texts")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
