"""Existing reasons, written as English before, become stored texts (a msgid and its
values): an import's last error, why it is held, its row errors and its warnings."""

from django.db import migrations
from django.db.models import Q

from core.legacy_texts import convert_rows, converted, converted_all


def _import(row):
    row.last_error_text = converted(row.last_error)
    row.review_reason_text = converted(row.review_reason)
    if isinstance(row.errors, list):
        row.errors = [
            {**error, "error": converted(error["error"])}
            if isinstance(error, dict) and isinstance(error.get("error"), str)
            else error
            for error in row.errors
        ]
    if isinstance(row.parse_info, dict) and "warnings" in row.parse_info:
        row.parse_info = {**row.parse_info, "warnings": converted_all(row.parse_info["warnings"])}


def forwards(apps, schema_editor):
    convert_rows(
        apps.get_model("pricefeed", "PriceImport"),
        reads=("last_error", "review_reason"),
        writes=("last_error_text", "review_reason_text", "errors", "parse_info"),
        convert=_import,
        where=~Q(last_error="")
        | ~Q(review_reason="")
        | ~Q(errors=[])
        | Q(parse_info__has_key="warnings"),
    )


class Migration(migrations.Migration):
    dependencies = [("pricefeed", "0011_stored_texts")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
