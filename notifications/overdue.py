"""Who hears that a price list did not come on time, and the e-mail itself.

An overdue-list alert (pricefeed.overdue) fans out into OverdueNotification rows, one
per recipient and alert, and one send event each, in one transaction, as an import
outcome does. The recipients are the enabled subscriptions that want overdue lists
(``on_overdue``) for the config (or for every config), at their own address: "reply to
the sender" has no sender here. Each mail is in its subscription's language, says when
the list was due in the config's zone and when the last one came, and links to the
config in the admin (PRICEFEED_PUBLIC_URL). A notification already SENT is never sent
again, whatever the retries; its Message-ID is derived from its id.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import formats, translation
from django.utils import timezone as dj_timezone

from core import metrics
from core.retry import outbox_retry_policy
from outbox.models import OutboxEvent
from pricefeed.models import OverdueAlert

from . import content, services
from .models import OverdueNotification, Subscription, supported_language

SEND_EVENT = "notification.overdue.send"

Status = OverdueNotification.Status


def overdue_recipients(config_id: int) -> dict[str, str]:
    """Each address that hears about the config's overdue lists, with the language of its
    mail: that of the oldest subscription naming it."""
    subscriptions = (
        Subscription.objects.filter(enabled=True, on_overdue=True)
        .exclude(email="")
        .filter(Q(configs=None) | Q(configs=config_id))
        .distinct()
        .order_by("pk")
    )
    recipients: dict[str, str] = {}
    for subscription in subscriptions:
        recipients.setdefault(subscription.email.lower(), supported_language(subscription.language))
    return recipients


def overdue_fan_out(*, alert_id: int) -> int:
    """Creates the notifications of an alert and a send event for each one not yet sent
    and not already waiting for one, in one transaction. Returns how many send events
    were published."""
    alert = OverdueAlert.objects.get(pk=alert_id)
    recipients = overdue_recipients(alert.config_id)
    with transaction.atomic():
        OverdueNotification.objects.bulk_create(
            [
                OverdueNotification(alert=alert, recipient=r, language=recipients[r])
                for r in sorted(recipients)
            ],
            ignore_conflicts=True,
        )
        pending = list(
            OverdueNotification.objects.filter(alert=alert, status=Status.PENDING).order_by("pk")
        )
        # A fan-out run again must not give a notification a second send event.
        covered = services.queued(pending)
        return services.publish_sends(
            SEND_EVENT,
            [([n], {"notification_id": n.pk}) for n in pending if n.pk not in covered],
        )


def _when(moment: datetime | None, zone) -> str:
    if moment is None:
        return ""
    return formats.date_format(dj_timezone.localtime(moment, zone), "DATETIME_FORMAT")


def render_overdue(alert: OverdueAlert, language: str | None = None) -> tuple[str, str, str]:
    """(subject, plain text, HTML) of the mail about an overdue list, in ``language`` (the
    default language when None). Times are in the config's zone, which the mail names."""
    language = services.mail_language(language)
    config = alert.config
    schedule = config.schedule()
    zone = schedule.zone if schedule is not None else dj_timezone.get_default_timezone()
    with translation.override(language):
        context = {
            "alert": alert,
            "config": config,
            "mailbox": config.mailbox,
            "expected": config.expected_display(),
            "due": _when(alert.due_at, zone),
            "zone": str(zone),
            "last_arrival": _when(alert.last_arrival, zone),
            "link": content.config_admin_url(config),
            "language": language,
        }
        return services._render("notifications/list_overdue", context)


def message_id_for(notification: OverdueNotification) -> str:
    return f"<pricefeed.overdue.{notification.pk}@{services._message_id_domain()}>"


def overdue_send(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Sends a batch of overdue-list mails; per event, None when the mail took effect (or
    had already). Each alert's mail is rendered once per language."""
    wanted = {event.id: int(event.payload["notification_id"]) for event in events}
    notifications = {
        n.pk: n
        for n in OverdueNotification.objects.select_related("alert__config__mailbox").filter(
            pk__in=set(wanted.values())
        )
    }
    results: dict[uuid.UUID, BaseException | None] = {}
    mails: dict[tuple[int, str], services.PreparedMail] = {}
    to_send = []
    for event in events:
        notification = notifications.get(wanted[event.id])
        if notification is None or notification.status == Status.SENT:
            results[event.id] = None  # gone, or already took effect
            continue
        try:
            language = services.mail_language(notification.language)
            key = (notification.alert_id, language)
            if key not in mails:
                mails[key] = services.PreparedMail(
                    *render_overdue(notification.alert, language), language=language
                )
            email = mails[key].email(
                recipient=notification.recipient, message_id=message_id_for(notification)
            )
        except Exception as exc:  # a template or header that cannot be made
            results[event.id] = exc
            continue
        to_send.append((event.id, email))
    if to_send:
        results.update(services._send(to_send))

    last_attempt = outbox_retry_policy().max_attempts
    for event in events:
        notification = notifications.get(wanted[event.id])
        error = results.get(event.id)
        if notification is None or notification.status == Status.SENT:
            continue
        if error is None:
            marked = OverdueNotification.objects.filter(
                pk=notification.pk, status=Status.PENDING
            ).update(
                status=Status.SENT,
                sent_at=Now(),
                message_id=message_id_for(notification),
                attempts=F("attempts") + 1,
                last_error="",
            )
            metrics.NOTIFICATIONS_SENT.inc(marked)
            continue
        given_up = event.attempts >= last_attempt
        OverdueNotification.objects.filter(pk=notification.pk).update(
            attempts=F("attempts") + 1,
            last_error=f"{type(error).__name__}: {error}"[:2000],
            **({"status": Status.FAILED} if given_up else {}),
        )
        metrics.NOTIFICATION_SEND_ERRORS.inc()
        if given_up:
            metrics.NOTIFICATIONS_FAILED.inc()
    return results
