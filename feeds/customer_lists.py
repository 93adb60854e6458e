"""Customer price lists: our published prices with a group's adjustment, as a CSV or
xlsx file mailed to the group's recipients on its schedule, once per (group, recipient,
published version).

The sweep (``customer_lists_sweep``, run by every listen_mail supervisor) finds each
enabled group whose latest scheduled moment (a day of its week at its time, Moscow time)
has passed since the one it last served, marks that moment served (a conditional
UPDATE: one instance wins) and, when the published version has not been listed for the
group yet (``CustomerListRun``, unique per group and version), publishes one
``feeds.customer_list`` event in the same transaction. An unchanged version is not
mailed again.

The event's handler (``customer_list_deliver``) makes a ``CustomerMailing`` per
recipient (unique per group, recipient and version), builds the file once and sends it
to every recipient still PENDING, each claimed first (``claimed_at``, a conditional
UPDATE: a second worker with the same event leaves it alone until the claim expires),
with the Message-ID ``<customer-list.{id}@...>`` of its row, then marks that row SENT.
A replayed event, a retry after a failure or a second sweep sends nothing already SENT.
A failure is kept on the row and the event is retried by the outbox; past its last
attempt the row is FAILED.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import connection as db
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import translation
from django.utils.translation import gettext

from core import metrics
from core.dbtime import db_now_minus
from outbox.services import publish

from . import writers
from .models import CustomerGroup, CustomerListRun, CustomerMailing

logger = logging.getLogger(__name__)

EVENT = "feeds.customer_list"
MOSCOW = ZoneInfo("Europe/Moscow")
MESSAGE_ID_PREFIX = "customer-list"
MIME_TYPES = {
    CustomerGroup.Format.CSV: "text/csv",
    CustomerGroup.Format.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


class MailingBusy(Exception):
    """Another worker is sending this customer list mail; the event is tried again."""


def latest_slot(group: CustomerGroup, now: datetime) -> datetime | None:
    """The group's latest scheduled moment at or before ``now`` (within a week), or None
    when it has no day."""
    local = now.astimezone(MOSCOW)
    for back in range(8):
        day = local.date() - timedelta(days=back)
        if day.isoweekday() in group.days:
            moment = datetime.combine(day, group.time, MOSCOW)
            if moment <= local:
                return moment
    return None


def _db_now() -> datetime:
    with db.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def customer_lists_sweep() -> int:
    """Publishes the customer lists that are due; returns how many."""
    now = _db_now()
    published = 0
    for group in CustomerGroup.objects.filter(enabled=True).exclude(days=[]):
        slot = latest_slot(group, now)
        if slot is None or (group.served_until is not None and group.served_until >= slot):
            continue
        if customer_list_publish(group_id=group.pk, slot=slot):
            published += 1
    return published


@transaction.atomic
def customer_list_publish(*, group_id: int, slot: datetime) -> bool:
    """Marks ``slot`` served for the group and, when the published version is new to
    it, publishes its list's event. False when another instance served the slot first,
    or the version was listed already."""
    from pricing.models import PublishedVersion

    moved = (
        CustomerGroup.objects.filter(pk=group_id, enabled=True)
        .filter(Q(served_until__isnull=True) | Q(served_until__lt=slot))
        .update(served_until=slot)
    )
    if not moved:
        return False
    version = PublishedVersion.objects.filter(pk=1).values_list("number", flat=True).first() or 0
    run, created = CustomerListRun.objects.get_or_create(group_id=group_id, version=version)
    if not created:
        return False
    publish(EVENT, run.group, {"group_id": group_id, "version": version})
    logger.info(
        "customer list due group=%s version=%s",
        group_id,
        version,
        extra={"action": "customer_list_due", "group_id": group_id},
    )
    return True


def message_id(mailing: CustomerMailing) -> str:
    domain = settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip(">") or "pricefeed.local"
    return f"<{MESSAGE_ID_PREFIX}.{mailing.pk}@{domain}>"


def customer_list_file(group: CustomerGroup) -> tuple[str, bytes, int | None]:
    """The group's file now: its name, its bytes and (xlsx) its products."""
    percent = writers.percent_of(group)
    stamp = datetime.now(MOSCOW).strftime("%Y-%m-%d")
    if group.format == CustomerGroup.Format.CSV:
        data = b"".join(writers.csv(percent))
        return f"prices-{stamp}.csv", data, None
    out, rows = writers.xlsx(percent, settings.PRICEFEED_FEEDS_XLSX_MAX_ROWS)
    with out:
        return f"prices-{stamp}.xlsx", out.read(), rows


def customer_list_deliver(*, group_id: int, version: int) -> int:
    """Mails the group's list of ``version`` to every recipient not mailed it yet;
    returns how many mails went out. Raises the first failure (after trying the rest)."""
    group = CustomerGroup.objects.filter(pk=group_id).first()
    if group is None:
        return 0
    CustomerMailing.objects.bulk_create(
        [
            CustomerMailing(group=group, recipient=recipient, version=version)
            for recipient in group.recipient_list()
        ],
        ignore_conflicts=True,
    )
    pending = list(
        CustomerMailing.objects.filter(
            group=group, version=version, status=CustomerMailing.Status.PENDING
        ).order_by("pk")
    )
    if not pending:
        return 0
    name, data, rows = customer_list_file(group)
    with translation.override(settings.LANGUAGE_CODE):
        subject = gettext("Price list: %(group)s") % {"group": group.name}
        body = gettext(
            "Our price list for %(group)s is attached (%(name)s).\n"
            "This mail is sent automatically; do not reply to it.\n"
        ) % {"group": group.name, "name": name}
    subject = " ".join(subject.split())
    sent = 0
    failure: BaseException | None = None
    timeout = settings.PRICEFEED_OUTBOX_CLAIM_TIMEOUT
    with get_connection() as smtp:
        for mailing in pending:
            claimed = (
                CustomerMailing.objects.filter(pk=mailing.pk, status=CustomerMailing.Status.PENDING)
                .filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=db_now_minus(timeout)))
                .update(claimed_at=Now())
            )
            if not claimed:
                # Sent meanwhile, or being sent by another worker: the event is retried,
                # and then finds it SENT (or its claim expired).
                if CustomerMailing.objects.filter(
                    pk=mailing.pk, status=CustomerMailing.Status.PENDING
                ).exists():
                    failure = failure or MailingBusy(mailing.pk)
                continue
            mid = message_id(mailing)
            mail = EmailMessage(
                subject, body, to=[mailing.recipient], headers={"Message-ID": mid}, connection=smtp
            )
            mail.attach(name, data, MIME_TYPES[CustomerGroup.Format(group.format)])
            try:
                mail.send()
            except Exception as exc:  # recorded on the row; the event is retried
                failure = failure or exc
                metrics.CUSTOMER_LIST_SEND_ERRORS.inc()
                failed = mailing.attempts + 1 >= settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS
                CustomerMailing.objects.filter(
                    pk=mailing.pk, status=CustomerMailing.Status.PENDING
                ).update(
                    attempts=F("attempts") + 1,
                    claimed_at=None,
                    last_error=f"{type(exc).__name__}: {exc}"[:2000],
                    status=(
                        CustomerMailing.Status.FAILED if failed else CustomerMailing.Status.PENDING
                    ),
                )
                if failed:
                    metrics.CUSTOMER_LISTS_FAILED.inc()
                logger.log(
                    logging.ERROR if failed else logging.WARNING,
                    "customer list %s mailing=%s recipient=%s error=%s",
                    "failed" if failed else "not sent, to be retried",
                    mailing.pk,
                    mailing.recipient,
                    exc,
                    extra={"action": "customer_list_failed", "mailing_id": mailing.pk},
                )
                continue
            CustomerMailing.objects.filter(
                pk=mailing.pk, status=CustomerMailing.Status.PENDING
            ).update(
                status=CustomerMailing.Status.SENT,
                claimed_at=None,
                sent_at=Now(),
                message_id=mid,
                attempts=F("attempts") + 1,
                last_error="",
                rows=rows,
            )
            sent += 1
            metrics.CUSTOMER_LISTS_SENT.inc()
    if failure is not None:
        raise failure
    return sent
