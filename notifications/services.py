"""Who hears about an import, and the e-mail itself.

An import outcome event fans out into Notification rows (unique per import, recipient
and kind) and one send event each, in one transaction. A message with several imports
announces them once, when its last import finishes: its event fans out into the same
Notification rows, one per import, recipient and kind, and one send event per
recipient, whose one mail (a digest) delivers all of them. Sending renders the templates
once per outcome and language in a batch and delivers through Django's e-mail backend over a few
connections, each reused across its share of the batch
(``PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS``, default 4, per worker), with a Message-ID
derived from the notification id; the batch's sent notifications are marked SENT in one
UPDATE. A notification already SENT is never sent again, whatever the retries.

A mail is written in its notification's language, which is its subscription's (for
"reply to sender", the language of the subscription that asked for it): every mail is
rendered under ``translation.override`` of it and says so in ``Content-Language``. Its
plain-text part and subject are rendered without HTML escaping (the HTML part escapes);
the subject is made one line, so nothing in a file name or config name can add a header.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from email.message import Message
from email.utils import formatdate

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.message import forbid_multi_line_headers
from django.db import transaction
from django.db.models import CharField, F, Prefetch, Value
from django.db.models.functions import Cast, Concat, Now
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext, ngettext

from core import metrics
from core.faults import crash_point
from core.retry import outbox_retry_policy
from core.texts import error_text
from outbox.models import OutboxEvent
from outbox.services import publish
from pricefeed.imports.outcome import FINAL
from pricefeed.models import PriceImport, PriceListConfig

from . import content
from .models import (
    Notification,
    OverdueNotification,
    Subscription,
    default_language,
    supported_language,
)

logger = logging.getLogger(__name__)

SEND_EVENT = "notification.send"


def recipients_for(price_import: PriceImport) -> dict[str, str]:
    """Who hears about an import's outcome: each address with the language of its mail."""
    return _recipients(_subscriptions(), price_import)


def _subscriptions() -> list[tuple[Subscription, set[int]]]:
    """The enabled subscriptions, oldest first, each with the ids of the configs it is
    limited to (empty: all)."""
    return [
        (subscription, {config.pk for config in subscription.configs.all()})
        for subscription in Subscription.objects.filter(enabled=True)
        .order_by("pk")
        .prefetch_related(Prefetch("configs", queryset=PriceListConfig.objects.only("pk")))
    ]


def _recipients(
    subscriptions: list[tuple[Subscription, set[int]]], price_import: PriceImport
) -> dict[str, str]:
    """Each recipient with the language of the subscription it comes from. An address
    named by several: the language of a subscription that names it beats that of one
    replying to the sender; among equals, the oldest subscription's."""
    named: dict[str, str] = {}
    senders: dict[str, str] = {}
    for subscription, configs in subscriptions:
        if configs and price_import.config_id not in configs:
            continue
        if not subscription.wants(price_import.status):
            continue
        language = supported_language(subscription.language)
        if subscription.email:
            named.setdefault(subscription.email.lower(), language)
        if subscription.reply_to_sender and price_import.message.from_address:
            senders.setdefault(price_import.message.from_address.lower(), language)
    return {**senders, **named}


def queued(notifications: Sequence[Notification | OverdueNotification]) -> set[int]:
    """Which of ``notifications`` a send event that is still to run (NEW or PROCESSING)
    already covers: their own send events, read by primary key."""
    payloads = OutboxEvent.objects.filter(
        pk__in={n.send_event for n in notifications if n.send_event is not None},
        status__in=[OutboxEvent.Status.NEW, OutboxEvent.Status.PROCESSING],
    ).values_list("payload", flat=True)
    return {pk for payload in payloads for pk in notification_ids(payload)}


def publish_sends[N: (Notification, OverdueNotification)](
    kind: str, deliveries: Sequence[tuple[Sequence[N], dict]]
) -> int:
    """Publishes one send event per (notifications, payload), the first notification its
    aggregate, and records on each notification the event that delivers it (one UPDATE
    for all), in the caller's transaction. Returns how many events were published."""
    linked: list[N] = []
    for notifications, payload in deliveries:
        event = publish(kind, notifications[0], payload)
        for notification in notifications:
            notification.send_event = event.pk
            linked.append(notification)
    if linked:
        type(linked[0]).objects.bulk_update(linked, ["send_event"])
    return len(deliveries)


def notification_ids(payload: dict) -> list[int]:
    """The notifications a send event delivers: one (``notification_id``) or, for a
    digest, several (``notification_ids``) in one mail."""
    if "notification_ids" in payload:
        return [int(pk) for pk in payload["notification_ids"]]
    pk = payload.get("notification_id")
    return [int(pk)] if pk else []


def notifications_fan_out(*, import_id: int) -> int:
    """Creates the notifications for an import's outcome and a send event for each one
    not yet sent and not already waiting for one, in one transaction. Returns how many
    send events were published."""
    price_import = PriceImport.objects.select_related("message").get(pk=import_id)
    recipients = recipients_for(price_import)
    with transaction.atomic():
        Notification.objects.bulk_create(
            [
                Notification(
                    price_import=price_import,
                    recipient=recipient,
                    kind=price_import.status,
                    language=recipients[recipient],
                )
                for recipient in sorted(recipients)
            ],
            ignore_conflicts=True,
        )
        pending = list(
            Notification.objects.filter(
                price_import=price_import,
                kind=price_import.status,
                status=Notification.Status.PENDING,
            )
        )
        # A fan-out run again (its event retried after this transaction committed) must
        # not give a notification a second send event: two events could be claimed by two
        # workers at once, and both would send before either marked it SENT.
        covered = queued(pending)
        return publish_sends(
            SEND_EVENT,
            [([n], {"notification_id": n.pk}) for n in pending if n.pk not in covered],
        )


def notifications_fan_out_message(*, message_id: int) -> int:
    """Creates the notifications for the outcomes of every finished import of a message
    (one per import, recipient and outcome, as for a single import) and one send event
    per recipient for those not yet sent nor waiting: one digest mail per recipient
    covering all of them, or today's single mail when a recipient has only one. In one
    transaction; returns how many send events were published."""
    imports = list(
        PriceImport.objects.select_related("message")
        .defer("message__raw", "message__match_report")
        .filter(message_id=message_id, status__in=FINAL)
        .order_by("pk")
    )
    subscriptions = _subscriptions()
    wanted = [
        Notification(
            price_import=price_import,
            recipient=recipient,
            kind=price_import.status,
            language=language,
        )
        for price_import in imports
        for recipient, language in sorted(_recipients(subscriptions, price_import).items())
    ]
    with transaction.atomic():
        Notification.objects.bulk_create(wanted, ignore_conflicts=True)
        pending = list(
            Notification.objects.filter(
                price_import__message_id=message_id,
                kind=F("price_import__status"),
                status=Notification.Status.PENDING,
            ).order_by("pk")
        )
        covered = queued(pending)
        groups: dict[str, list[Notification]] = {}
        for notification in pending:
            if notification.pk not in covered:
                groups.setdefault(notification.recipient, []).append(notification)
        return publish_sends(
            SEND_EVENT,
            [
                (
                    group,
                    {"notification_id": group[0].pk}
                    if len(group) == 1
                    else {"notification_ids": [n.pk for n in group]},
                )
                for group in groups.values()
            ],
        )


def message_id_for(notification: Notification) -> str:
    return _message_id(notification.pk, _message_id_domain())


def _message_id_domain() -> str:
    return settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip(">") or "pricefeed.local"


# A notification's Message-ID is <pricefeed.notification.{id}@{domain}>: written here
# once, used by _message_id and by the SQL that records a batch as sent.
_MESSAGE_ID_PREFIX = "<pricefeed.notification."


def _message_id_suffix(domain: str) -> str:
    return f"@{domain}>"


def _message_id(pk: int, domain: str) -> str:
    return f"{_MESSAGE_ID_PREFIX}{pk}{_message_id_suffix(domain)}"


def mail_language(code: str | None) -> str:
    """The language a mail is written in: ``code`` when it is one of settings.LANGUAGES
    (or a variant of one), else the default language."""
    return supported_language(code) if code else default_language()


def _one_line(text: str) -> str:
    """A subject as one line: every run of whitespace, line breaks included (CR, LF,
    U+2028 and the rest str.split() knows), becomes one space, so no header can be
    smuggled into a mail through a file or config name."""
    return " ".join(text.split())


def _render(name: str, context: dict) -> tuple[str, str, str]:
    """(subject, plain text, HTML) from the templates ``name``_subject.txt, .txt and
    .html. The .txt templates turn autoescaping off: "Sales <sales@acme.test>" stays so
    in the plain text and the subject; the HTML part is escaped as ever."""
    return (
        _one_line(render_to_string(f"{name}_subject.txt", context)),
        render_to_string(f"{name}.txt", context),
        render_to_string(f"{name}.html", context),
    )


def _import_context(price_import: PriceImport, *, errors: int, changes: int) -> dict:
    """What the templates say about one import: its file's own name, its config, the
    reason in the file's terms, the diff summary (with the ``changes`` largest price
    changes), the first ``errors`` row errors, and the link to it in the admin (""
    without PRICEFEED_PUBLIC_URL)."""
    shown = (price_import.errors or [])[:errors]
    return {
        "import": price_import,
        "config": price_import.config,
        "file": content.file_name(price_import),
        "reason": content.reason(price_import),
        "diff": content.diff_summary(price_import.diff, changes=changes),
        "errors": content.row_errors(shown),
        "more_errors": max(price_import.rows_failed - len(shown), 0) if shown else 0,
        "link": content.admin_url(price_import),
    }


def render_outcome(price_import: PriceImport, language: str | None = None) -> tuple[str, str, str]:
    """(subject, plain text, HTML) of the mail about an import's outcome, in ``language``
    (the default language when None).

    The templates see the import, its file's name, its config, the e-mail it came from,
    the diff summary, the first errors and the link to the import, not the recipient:
    every notification about one outcome in one language shares them.
    """
    language = mail_language(language)
    with translation.override(language):
        context = {
            **_import_context(price_import, errors=10, changes=content.CHANGES_SHOWN),
            "message": price_import.message,
            "language": language,
        }
        return _render("notifications/import_outcome", context)


def build_email(notification: Notification, connection=None) -> EmailMultiAlternatives:
    """The mail for one notification, built the plain Django way (the reference that
    PreparedMail reproduces byte for byte, faster)."""
    language = mail_language(notification.language)
    subject, text, html = render_outcome(notification.price_import, language)
    email = EmailMultiAlternatives(
        subject=subject,
        body=text,
        to=[notification.recipient],
        connection=connection,
        headers={"Message-ID": message_id_for(notification), "Content-Language": language},
    )
    email.attach_alternative(html, "text/html")
    return email


def _outcome_counts(imports: list[PriceImport]) -> str:
    """How many imports ended how ("19 succeeded, 1 failed"), in the active language."""
    counts: dict[str, int] = {}
    for price_import in imports:
        counts[price_import.status] = counts.get(price_import.status, 0) + 1
    parts = []
    for status in [*FINAL, *sorted(set(counts) - set(FINAL))]:
        n = counts.get(status, 0)
        if not n:
            continue
        if status == PriceImport.Status.SUCCEEDED:
            parts.append(ngettext("%(count)d succeeded", "%(count)d succeeded", n) % {"count": n})
        elif status == PriceImport.Status.PARTIAL:
            parts.append(ngettext("%(count)d partial", "%(count)d partial", n) % {"count": n})
        elif status == PriceImport.Status.FAILED:
            parts.append(ngettext("%(count)d failed", "%(count)d failed", n) % {"count": n})
        else:  # rerun since it was announced, say: named as its status says
            label = PriceImport.Status(status).label
            parts.append(gettext("%(count)d %(status)s") % {"count": n, "status": label})
    return ", ".join(parts)


def render_digest(imports: list[PriceImport], language: str | None = None) -> tuple[str, str, str]:
    """(subject, plain text, HTML) of the digest about several imports of one message, in
    ``language`` (the default language when None).

    The templates see the e-mail they came from, the outcome counts and, per import,
    what the single mail says of it (file name, config, reason, diff summary, its first
    errors and the link); not the recipient."""
    language = mail_language(language)
    with translation.override(language):
        context = {
            "message": imports[0].message,
            "total": len(imports),
            "summary": _outcome_counts(imports),
            "imports": [
                _import_context(price_import, errors=3, changes=3) for price_import in imports
            ],
            "language": language,
        }
        return _render("notifications/message_outcome", context)


class _Serialised(Message):
    """What EmailMessage.message() returns for a mail serialised ahead: the bytes.

    Django's backends read only ``as_bytes()`` (and ``get_charset()``) of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self._data = data

    def as_bytes(self, unixfrom: bool = False, linesep: str = "\n", **kwargs) -> bytes:  # type: ignore[override]
        if linesep == "\r\n":
            return self._data
        return self._data.replace(b"\r\n", linesep.encode())


class _PrebuiltEmail(EmailMultiAlternatives):
    """An EmailMultiAlternatives whose MIME bytes were made by PreparedMail."""

    def __init__(self, *, data: bytes, **kwargs) -> None:
        super().__init__(**kwargs)
        self._data = data

    def message(self) -> Message:  # type: ignore[override]
        return _Serialised(self._data)


class PreparedMail:
    """A notification mail rendered and serialised once.

    Every notification it delivers gets the same bytes but for three header lines:
    To (the recipient), Message-ID (from the notification id) and Date (now). They are
    produced with the functions Django's own message() uses, so a mail is what
    build_email() would make, byte for byte (but for the MIME boundary, which is shared),
    at a fraction of the cost of building and serialising a MIME tree per mail.
    """

    _TO = "recipient@placeholder.invalid"
    _ID = "<message-id@placeholder.invalid>"

    def __init__(self, subject: str, text: str, html: str, language: str | None = None) -> None:
        self.subject, self.text, self.html = subject, text, html
        self.language = mail_language(language)
        template = EmailMultiAlternatives(
            subject=self.subject,
            body=self.text,
            to=[self._TO],
            headers={"Message-ID": self._ID, "Content-Language": self.language},
        )
        template.attach_alternative(self.html, "text/html")
        self.from_email = template.from_email
        self.encoding = template.encoding or settings.DEFAULT_CHARSET
        serialised = template.message().as_bytes(linesep="\r\n")  # type: ignore[call-arg]
        head, sep, self._body = serialised.partition(b"\r\n\r\n")
        assert sep, "a MIME message has a blank line after its headers"
        self._head = head.split(b"\r\n")
        self._slots = {}
        for i, line in enumerate(self._head):
            for name in ("To", "Message-ID", "Date"):
                if line.startswith(name.encode() + b": "):
                    self._slots[name] = i
        assert len(self._slots) == 3, f"headers to fill not found: {self._slots}"

    def data(self, *, recipient: str, message_id: str) -> bytes:
        """The mail to ``recipient`` as it goes over the wire (CRLF line ends)."""
        head = list(self._head)
        for name, value in (
            ("To", recipient),
            ("Message-ID", message_id),
            ("Date", formatdate(localtime=settings.EMAIL_USE_LOCALTIME)),
        ):
            # Raises BadHeaderError on a line break; encodes a non-ASCII address.
            value = forbid_multi_line_headers(name, value, self.encoding)[1]
            head[self._slots[name]] = f"{name}: {value}".encode("ascii")
        return b"\r\n".join(head) + b"\r\n\r\n" + self._body

    def email(self, *, recipient: str, message_id: str, connection=None) -> EmailMultiAlternatives:
        email = _PrebuiltEmail(
            data=self.data(recipient=recipient, message_id=message_id),
            subject=self.subject,
            body=self.text,
            to=[recipient],
            connection=connection,
            headers={"Message-ID": message_id, "Content-Language": self.language},
        )
        email.attach_alternative(self.html, "text/html")
        return email


class OutcomeMail(PreparedMail):
    """The mail about one import outcome, in ``language`` (default: the default one)."""

    def __init__(self, price_import: PriceImport, language: str | None = None) -> None:
        language = mail_language(language)
        super().__init__(*render_outcome(price_import, language), language=language)


def digest_mail(imports: list[PriceImport], language: str | None = None) -> PreparedMail:
    """The digest about several import outcomes of one message, in ``language``."""
    language = mail_language(language)
    return PreparedMail(*render_digest(imports, language), language=language)


def _smtp_connections(mails: int) -> int:
    """How many SMTP connections a batch of ``mails`` is spread over: the send path waits
    on the server's replies, so a few connections overlap those waits; a small batch
    keeps to one."""
    most = max(1, settings.PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS)
    return max(1, min(most, mails // MAILS_PER_CONNECTION))


MAILS_PER_CONNECTION = 10  # fewer than this per extra connection: not worth its handshake


def _send_over_one_connection(
    mails: list[tuple[uuid.UUID, EmailMultiAlternatives]],
) -> dict[uuid.UUID, BaseException | None]:
    """Sends ``mails`` in order over one connection of Django's configured backend (TLS
    verified, timeout set as configured); per event, None or the exception."""
    results: dict[uuid.UUID, BaseException | None] = {}
    try:
        with get_connection(fail_silently=False) as connection:
            for event_id, email in mails:
                try:
                    connection.send_messages([email])
                    crash_point("notification_after_smtp")
                except Exception as exc:
                    results[event_id] = exc
                else:
                    results[event_id] = None
    except Exception as exc:  # could not connect, or closing failed
        for event_id, _ in mails:
            if results.get(event_id, exc) is not None:
                results[event_id] = exc
    return results


def _send(
    mails: list[tuple[uuid.UUID, EmailMultiAlternatives]],
) -> dict[uuid.UUID, BaseException | None]:
    """Spreads ``mails`` over a few connections (threads that only talk SMTP; the
    database stays with the caller's thread) and gathers the results."""
    count = _smtp_connections(len(mails))
    if count == 1:
        return _send_over_one_connection(mails)
    shares = [mails[i::count] for i in range(count)]
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="smtp") as pool:
        results: dict[uuid.UUID, BaseException | None] = {}
        for part in pool.map(_send_over_one_connection, shares):
            results.update(part)
    return results


def notifications_send(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Sends a batch; per event, None when the mail took effect (or had already).

    An event delivers one notification (the mail about one import's outcome) or a digest:
    the notifications of one recipient about several imports of one message, in one mail
    whose Message-ID is that of its first notification, all marked SENT together. Each
    outcome (and each digest) is rendered once per batch and language; the mails go out over a few
    reused connections; the single notifications sent are marked SENT in one UPDATE. A
    crash between the server's acceptance and that UPDATE sends those mails again on
    retry, with the same Message-ID (at least once, never a different mail).
    """
    wanted = {event.id: notification_ids(event.payload) for event in events}
    notifications = {
        n.pk: n
        for n in Notification.objects.only(
            "price_import_id", "recipient", "kind", "status", "language"
        ).filter(pk__in={pk for ids in wanted.values() for pk in ids})
    }
    # A batch is mostly about one import or a few: each is loaded once, not per row.
    imports = {
        i.pk: i
        for i in PriceImport.objects.select_related("config", "message")
        # The stored e-mail can be megabytes; the notification needs its headers only.
        .defer("message__raw", "message__match_report")
        .filter(pk__in={n.price_import_id for n in notifications.values()})
    }
    results: dict[uuid.UUID, BaseException | None] = {}
    domain = _message_id_domain()
    # Each outcome (and each digest) is rendered once per language.
    outcomes: dict[tuple[int, str, str], OutcomeMail] = {}
    digests: dict[tuple[str, tuple[tuple[int, str], ...]], PreparedMail] = {}
    to_send: list[tuple[uuid.UUID, EmailMultiAlternatives]] = []
    # The notifications each event's mail delivers (those not yet SENT).
    covered: dict[uuid.UUID, list[Notification]] = {}
    digest_ids: dict[uuid.UUID, str] = {}  # the Message-ID of each digest
    for event in events:
        ids = wanted[event.id]
        pending = [
            notifications[pk]
            for pk in ids
            if pk in notifications and notifications[pk].status != Notification.Status.SENT
        ]
        if not pending:
            results[event.id] = None  # gone, or already took effect: nothing to send
            continue
        covered[event.id] = pending
        try:
            if len(ids) == 1:
                (notification,) = pending
                language = mail_language(notification.language)
                key = (notification.price_import_id, notification.kind, language)
                if key not in outcomes:
                    outcomes[key] = OutcomeMail(imports[notification.price_import_id], language)
                email = outcomes[key].email(
                    recipient=notification.recipient,
                    message_id=_message_id(notification.pk, domain),
                )
            else:
                # One recipient's notifications of one message: their fan-out gave them
                # one language (should an older one differ, the first one's is used).
                language = mail_language(pending[0].language)
                digest_key = (language, tuple((n.price_import_id, n.kind) for n in pending))
                if digest_key not in digests:
                    digests[digest_key] = digest_mail(
                        [imports[n.price_import_id] for n in pending], language
                    )
                message_id = _message_id(min(ids), domain)
                email = digests[digest_key].email(
                    recipient=pending[0].recipient, message_id=message_id
                )
                digest_ids[event.id] = message_id
        except Exception as exc:  # a template or header that cannot be made
            results[event.id] = exc
            continue
        to_send.append((event.id, email))

    if to_send:
        results.update(_send(to_send))

    sent = [
        covered[e][0].pk
        for e, error in results.items()
        if e in covered and e not in digest_ids and error is None
    ]
    if sent:
        # One UPDATE for the batch; the Message-ID is made in SQL as _message_id makes it.
        unsent = Notification.objects.filter(pk__in=sent, status=Notification.Status.PENDING)
        marked = unsent.update(
            status=Notification.Status.SENT,
            sent_at=Now(),
            message_id=Concat(
                Value(_MESSAGE_ID_PREFIX),
                Cast("pk", output_field=CharField()),
                Value(_message_id_suffix(domain)),
            ),
            attempts=F("attempts") + 1,
            last_error="",
        )
        metrics.NOTIFICATIONS_SENT.inc(marked)
    for event_id, message_id in digest_ids.items():
        if results.get(event_id) is None:
            marked = Notification.objects.filter(
                pk__in=[n.pk for n in covered[event_id]], status=Notification.Status.PENDING
            ).update(
                status=Notification.Status.SENT,
                sent_at=Now(),
                message_id=message_id,
                attempts=F("attempts") + 1,
                last_error="",
            )
            metrics.NOTIFICATIONS_SENT.inc(marked)
    last_attempt = outbox_retry_policy().max_attempts
    attempts = {event.id: event.attempts for event in events}
    for event_id, error in results.items():
        if error is None or event_id not in covered:
            continue
        given_up = attempts[event_id] >= last_attempt
        marked = Notification.objects.filter(pk__in=[n.pk for n in covered[event_id]]).update(
            attempts=F("attempts") + 1,
            last_error=error_text(error)[:2000],
            **({"status": Notification.Status.FAILED} if given_up else {}),
        )
        metrics.NOTIFICATION_SEND_ERRORS.inc(marked)
        if given_up:
            metrics.NOTIFICATIONS_FAILED.inc(marked)
    return results
