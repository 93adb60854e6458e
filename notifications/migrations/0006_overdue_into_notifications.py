"""One delivery model for every kind of notification, 2 of 3: the OverdueNotification
rows move into Notification as "list_overdue" notifications, keeping their recipient,
language, status, attempts, error, times and Message-ID. They get new ids, so the send
events that deliver them are pointed at the new ids (their payload and aggregate), and
the id sequence is first moved past every old overdue id, so that no new notification
takes a Message-ID already sent.
"""

from django.db import migrations

FIELDS = (
    "recipient",
    "language",
    "status",
    "message_id",
    "attempts",
    "last_error",
    "created_at",
    "sent_at",
    "send_event",
)


def merge_overdue(apps, schema_editor):
    Notification = apps.get_model("notifications", "Notification")
    OverdueNotification = apps.get_model("notifications", "OverdueNotification")
    OutboxEvent = apps.get_model("outbox", "OutboxEvent")
    table = Notification._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), GREATEST("
            f"(SELECT COALESCE(MAX(id), 0) FROM {table}), "
            f"(SELECT COALESCE(MAX(id), 0) FROM {OverdueNotification._meta.db_table}), 1))"
        )
    # One INSERT and one UPDATE per batch: bulk_create gives back the new ids in order.
    olds = list(OverdueNotification.objects.order_by("pk"))
    if not olds:
        return
    news = Notification.objects.bulk_create(
        [
            Notification(
                kind="list_overdue",
                alert_id=old.alert_id,
                outcome="",
                **{name: getattr(old, name) for name in FIELDS},
            )
            for old in olds
        ],
        batch_size=2000,
    )
    moved = {old.pk: new.pk for old, new in zip(olds, news, strict=True)}
    events = []
    for event in OutboxEvent.objects.filter(kind="notification.overdue.send"):
        old = int(event.payload.get("notification_id") or 0)
        if old not in moved:
            continue
        event.payload = {**event.payload, "notification_id": moved[old]}
        event.aggregate_type = "notifications.notification"
        event.aggregate_id = str(moved[old])
        events.append(event)
    OutboxEvent.objects.bulk_update(
        events, ["payload", "aggregate_type", "aggregate_id"], batch_size=500
    )


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0005_one_notification_model"),
    ]

    operations = [
        migrations.RunPython(merge_overdue, migrations.RunPython.noop),
    ]
