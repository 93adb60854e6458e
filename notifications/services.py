"""Who hears about an import, and the e-mail itself.

An import outcome event fans out into Notification rows (unique per import, recipient
and kind) and one send event each, in one transaction. Sending renders the templates
and delivers through Django's e-mail backend, one connection per batch, with a
Message-ID derived from the notification id; a notification already SENT is never sent
again, whatever the retries.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.template.loader import render_to_string

from outbox.models import OutboxEvent
from outbox.services import publish
from pricefeed.faults import crash_point
from pricefeed.models import PriceImport

from .models import Notification, Subscription

logger = logging.getLogger(__name__)

SEND_EVENT = "notification.send"


def recipients_for(price_import: PriceImport) -> set[str]:
    recipients: set[str] = set()
    subscriptions = (
        Subscription.objects.filter(enabled=True)
        .filter(Q(configs=None) | Q(configs=price_import.config_id))
        .distinct()
    )
    for subscription in subscriptions:
        if not subscription.wants(price_import.status):
            continue
        if subscription.email:
            recipients.add(subscription.email.lower())
        if subscription.reply_to_sender and price_import.message.from_address:
            recipients.add(price_import.message.from_address.lower())
    return recipients


def notifications_fan_out(*, import_id: int) -> int:
    """Creates the notifications for an import's outcome and a send event for each one
    not yet sent, in one transaction. Returns how many send events were published."""
    price_import = PriceImport.objects.select_related("message").get(pk=import_id)
    recipients = recipients_for(price_import)
    with transaction.atomic():
        Notification.objects.bulk_create(
            [
                Notification(price_import=price_import, recipient=r, kind=price_import.status)
                for r in sorted(recipients)
            ],
            ignore_conflicts=True,
        )
        pending = Notification.objects.filter(
            price_import=price_import, kind=price_import.status, status=Notification.Status.PENDING
        )
        published = 0
        for notification in pending:
            publish(SEND_EVENT, notification, {"notification_id": notification.pk})
            published += 1
    return published


def message_id_for(notification: Notification) -> str:
    domain = settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip(">") or "pricefeed.local"
    return f"<pricefeed.notification.{notification.pk}@{domain}>"


def build_email(notification: Notification, connection) -> EmailMultiAlternatives:
    price_import = notification.price_import
    context = {
        "notification": notification,
        "import": price_import,
        "config": price_import.config,
        "message": price_import.message,
        "diff": price_import.diff or {},
        "errors": (price_import.errors or [])[:10],
    }
    subject = " ".join(
        render_to_string("notifications/import_outcome_subject.txt", context).split()
    )
    email = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string("notifications/import_outcome.txt", context),
        to=[notification.recipient],
        connection=connection,
        headers={"Message-ID": message_id_for(notification)},
    )
    email.attach_alternative(
        render_to_string("notifications/import_outcome.html", context), "text/html"
    )
    return email


def notifications_send(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Sends a batch over one connection; per event, None when the mail took effect."""
    from pricefeed.retry import outbox_retry_policy

    wanted = {event.id: event.payload.get("notification_id") for event in events}
    notifications = {
        n.pk: n
        for n in Notification.objects.select_related(
            "price_import__config", "price_import__message"
        )
        # The stored e-mail can be megabytes; the notification needs its headers only.
        .defer("price_import__message__raw", "price_import__message__match_report")
        .filter(pk__in=[pk for pk in wanted.values() if pk])
    }
    results: dict[uuid.UUID, BaseException | None] = {}
    last_attempt = outbox_retry_policy().max_attempts
    connection = get_connection(fail_silently=False)
    with connection:
        for event in events:
            notification = notifications.get(wanted[event.id])
            if notification is None or notification.status == Notification.Status.SENT:
                results[event.id] = None  # gone, or already took effect: nothing to send
                continue
            try:
                connection.send_messages([build_email(notification, connection)])
                crash_point("notification_after_smtp")
            except Exception as exc:
                Notification.objects.filter(pk=notification.pk).update(
                    attempts=F("attempts") + 1,
                    last_error=f"{type(exc).__name__}: {exc}"[:2000],
                    **(
                        {"status": Notification.Status.FAILED}
                        if event.attempts >= last_attempt
                        else {}
                    ),
                )
                results[event.id] = exc
                continue
            Notification.objects.filter(
                pk=notification.pk, status=Notification.Status.PENDING
            ).update(
                status=Notification.Status.SENT,
                sent_at=Now(),
                message_id=message_id_for(notification),
                attempts=F("attempts") + 1,
                last_error="",
            )
            results[event.id] = None
    return results
