"""One delivery model for every kind of notification, 3 of 3: OverdueNotification goes
(its rows are notifications since 0006)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0006_overdue_into_notifications"),
    ]

    operations = [
        migrations.DeleteModel(name="OverdueNotification"),
    ]
