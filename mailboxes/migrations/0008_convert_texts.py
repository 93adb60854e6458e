"""Existing reasons, written as English before, become stored texts (a msgid and its
values): a mailbox's last error and test result where they have none, a message's last
error, warnings and match report."""

from django.db import migrations
from django.db.models import Q

from core.legacy_texts import convert_rows, converted, converted_all, converted_report


def _mailbox(row):
    if not row.last_error_text:
        row.last_error_text = converted(row.last_error)
    if not row.test_result_text:
        row.test_result_text = converted(row.test_result)


def _message(row):
    row.last_error_text = converted(row.last_error)
    row.warnings = converted_all(row.warnings)
    row.match_report = converted_report(row.match_report)


def forwards(apps, schema_editor):
    convert_rows(
        apps.get_model("mailboxes", "Mailbox"),
        reads=("last_error", "test_result"),
        writes=("last_error_text", "test_result_text"),
        convert=_mailbox,
        where=~Q(last_error="") | ~Q(test_result=""),
    )
    convert_rows(
        apps.get_model("mailboxes", "InboundMessage"),
        reads=("last_error",),
        writes=("last_error_text", "warnings", "match_report"),
        convert=_message,
        where=~Q(last_error="") | ~Q(warnings=[]) | ~Q(match_report={}),
    )


class Migration(migrations.Migration):
    dependencies = [("mailboxes", "0007_stored_texts")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
