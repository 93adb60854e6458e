"""One delivery model for every kind of notification (notifications.kinds), 1 of 3.

Notification gets a ``kind`` (its spec's name; the rows so far are "import_outcome"),
its former ``kind`` (the import outcome) becomes ``outcome``, and it may be about an
overdue-list alert instead of an import. (0006 moves the OverdueNotification rows into
it, 0007 deletes that model: each in a transaction of its own, since PostgreSQL makes
no index on a table with rows just written in the same transaction.)
"""

import django.db.models.deletion
from django.db import migrations, models

class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0004_send_event"),
        ("outbox", "0005_no_aggregate_index"),
        ("pricefeed", "0010_import_accepted_index"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="notification", name="one_notification_each"),
        migrations.RenameField(model_name="notification", old_name="kind", new_name="outcome"),
        migrations.AlterField(
            model_name="notification",
            name="outcome",
            field=models.CharField(blank=True, default="", max_length=20, verbose_name="outcome"),
        ),
        migrations.AddField(
            model_name="notification",
            name="kind",
            field=models.CharField(default="import_outcome", max_length=40, verbose_name="kind"),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="notification",
            name="price_import",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="notifications",
                to="pricefeed.priceimport",
                verbose_name="price import",
            ),
        ),
        migrations.AlterField(
            model_name="overduenotification",
            name="alert",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="overdue_notifications",
                to="pricefeed.overduealert",
                verbose_name="overdue list alert",
            ),
        ),
        migrations.AddField(
            model_name="notification",
            name="alert",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="notifications",
                to="pricefeed.overduealert",
                verbose_name="overdue list alert",
            ),
        ),
        migrations.AddConstraint(
            model_name="notification",
            constraint=models.UniqueConstraint(
                fields=("kind", "price_import", "alert", "recipient", "outcome"),
                name="one_notification_each",
                nulls_distinct=False,
            ),
        ),
        migrations.AddConstraint(
            model_name="notification",
            constraint=models.CheckConstraint(
                condition=models.Q(("alert__isnull", True), ("price_import__isnull", False))
                | models.Q(("alert__isnull", False), ("price_import__isnull", True)),
                name="notification_has_one_subject",
            ),
        ),
    ]
