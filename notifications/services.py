"""Who hears about what, and the e-mail itself: one pipeline for every kind.

A kind of notification (notifications.kinds: an import's outcome, a list overdue, ...)
is a spec; this module does the rest the same way for each. An event announcing
something fans out (``fan_out``) into Notification rows, unique per kind, subject,
recipient and outcome, and one send event each, in one transaction: or, for a message
with several imports, one send event per recipient, whose one mail (a digest) delivers
all of them. Sending (``send``) renders the templates once per subject (or digest) and
language in a batch and delivers through Django's e-mail backend over a few connections,
each reused across its share of the batch (``PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS``,
default 4, per worker), with a Message-ID derived from the notification id (a digest's:
from its first); the batch's sent notifications are marked SENT in one UPDATE, a
failure is recorded as its error (``core.texts.error_text``) and, past the outbox's
last attempt, FAILED. Every attempt is kept as a DeliveryAttempt with the server's reply
(its 250 too, which smtplib drops: ``_data_replies``), written with the outcome. A
notification already SENT is never sent again, whatever the retries.

A mail is written in its notification's language, which is its subscription's (for
"reply to sender", the language of the subscription that asked for it): every mail is
rendered under ``translation.override`` of it and says so in ``Content-Language``. Its
plain-text part and subject are rendered without HTML escaping (the HTML part escapes);
the subject is made one line, so nothing in a file name or config name can add a header.
"""

from __future__ import annotations

import logging
import smtplib
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from email.message import Message
from email.utils import formatdate
from typing import Any, NamedTuple

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.message import forbid_multi_line_headers
from django.db import transaction
from django.db.models import CharField, F, Model, OuterRef, Prefetch, Q, Subquery, Value
from django.db.models.functions import Cast, Concat, Now
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy, ngettext

from core import metrics
from core.faults import crash_point
from core.retry import outbox_retry_policy
from core.texts import error_text, stored
from outbox.models import OutboxEvent
from outbox.services import publish
from pricefeed.imports.outcome import FINAL
from pricefeed.models import PriceImport, PriceListConfig

from . import content
from .kinds import Kind, kind_for, register
from .models import (
    DeliveryAttempt,
    Notification,
    Subscription,
    default_language,
    supported_language,
)
from .texts import server_reply, smtp_code

logger = logging.getLogger(__name__)

Status = Notification.Status
Attempt = DeliveryAttempt.Outcome

# -- the mail about an import's outcome (or a digest of several) --------------------------


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


def _outcome_counts(imports: Sequence[PriceImport]) -> str:
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


def _outcome_mail(imports: Sequence[PriceImport]) -> tuple[str, dict]:
    """One import: the import, its file's name, its config, the e-mail it came from, the
    diff summary, the first errors and the link. Several of one message (a digest): the
    e-mail, the outcome counts and, per import, what the single mail says of it (its
    first errors and largest changes fewer). Never the recipient: every notification
    about one outcome in one language shares the mail."""
    if len(imports) == 1:
        (price_import,) = imports
        context = _import_context(price_import, errors=10, changes=content.CHANGES_SHOWN)
        return "notifications/import_outcome", {**context, "message": price_import.message}
    return "notifications/message_outcome", {
        "message": imports[0].message,
        "total": len(imports),
        "summary": _outcome_counts(imports),
        "imports": [_import_context(i, errors=3, changes=3) for i in imports],
    }


def _sender(price_import: PriceImport) -> str:
    return price_import.message.from_address


def _imports() -> Any:
    # The stored e-mail can be megabytes; the mail needs its headers only.
    return PriceImport.objects.select_related("config", "message").defer(
        "message__raw", "message__match_report"
    )


IMPORT_OUTCOME = register(
    Kind(
        name="import_outcome",
        label=gettext_lazy("import outcome"),
        subject="price_import",
        subjects=_imports,
        subscription_flag="on_{outcome}",
        sender=_sender,
        mail=_outcome_mail,
        send_event="notification.send",
        message_id_prefix="pricefeed.notification",
    )
)
SEND_EVENT = IMPORT_OUTCOME.send_event


# -- who hears about what ------------------------------------------------------------------


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
    kind: Kind,
    subscriptions: list[tuple[Subscription, set[int]]],
    subject: Any,
    outcome: str,
) -> dict[str, str]:
    """Each recipient of a mail of ``kind`` about ``subject`` with the language of the
    subscription it comes from. An address named by several: the language of a
    subscription that names it beats that of one replying to the sender; among equals,
    the oldest subscription's."""
    flag = kind.flag(outcome)
    sender = kind.sender(subject)
    named: dict[str, str] = {}
    senders: dict[str, str] = {}
    for subscription, configs in subscriptions:
        if configs and subject.config_id not in configs:
            continue
        if not subscription.wants(flag):
            continue
        language = supported_language(subscription.language)
        if subscription.email:
            named.setdefault(subscription.email.lower(), language)
        if subscription.reply_to_sender and sender:
            senders.setdefault(sender.lower(), language)
    return {**senders, **named}


def recipients_for(price_import: PriceImport) -> dict[str, str]:
    """Who hears about an import's outcome: each address with the language of its mail."""
    return _recipients(IMPORT_OUTCOME, _subscriptions(), price_import, price_import.status)


def queued(notifications: Sequence[Notification]) -> set[int]:
    """Which of ``notifications`` a send event that is still to run (NEW or PROCESSING)
    already covers: their own send events, read by primary key."""
    payloads = OutboxEvent.objects.filter(
        pk__in={n.send_event for n in notifications if n.send_event is not None},
        status__in=[OutboxEvent.Status.NEW, OutboxEvent.Status.PROCESSING],
    ).values_list("payload", flat=True)
    return {pk for payload in payloads for pk in notification_ids(payload)}


def publish_sends(kind: str, deliveries: Sequence[tuple[Sequence[Notification], dict]]) -> int:
    """Publishes one send event per (notifications, payload), the first notification its
    aggregate, and records on each notification the event that delivers it (one UPDATE
    for all), in the caller's transaction. Returns how many events were published."""
    linked: list[Notification] = []
    for notifications, payload in deliveries:
        event = publish(kind, notifications[0], payload)
        for notification in notifications:
            notification.send_event = event.pk
            linked.append(notification)
    if linked:
        Notification.objects.bulk_update(linked, ["send_event"])
    return len(deliveries)


def notification_ids(payload: dict) -> list[int]:
    """The notifications a send event delivers: one (``notification_id``) or, for a
    digest, several (``notification_ids``) in one mail."""
    if "notification_ids" in payload:
        return [int(pk) for pk in payload["notification_ids"]]
    pk = payload.get("notification_id")
    return [int(pk)] if pk else []


def _payload(group: Sequence[Notification]) -> dict:
    if len(group) == 1:
        return {"notification_id": group[0].pk}
    return {"notification_ids": [n.pk for n in group]}


def fan_out(kind: Kind, subjects: Sequence[tuple[Model, str]], *, digest: bool = False) -> int:
    """Creates the notifications of ``kind`` about ``subjects`` (each with its outcome,
    "" for none) for their recipients, and a send event for each one not yet sent and
    not already waiting for one, in one transaction; ``digest``: one send event per
    recipient, its one mail covering all of theirs. Returns how many send events were
    published. Run again (its event retried after this transaction committed) it
    publishes nothing twice: two events could be claimed by two workers at once, and
    both would send before either marked the notification SENT."""
    if not subjects:
        return 0
    subscriptions = _subscriptions()
    wanted = [
        Notification(
            kind=kind.name,
            recipient=recipient,
            outcome=outcome,
            language=language,
            **{kind.subject: subject},
        )
        for subject, outcome in subjects
        for recipient, language in sorted(
            _recipients(kind, subscriptions, subject, outcome).items()
        )
    ]
    about = Q()
    for subject, outcome in subjects:
        about |= Q(**{kind.subject: subject}, outcome=outcome)
    with transaction.atomic():
        Notification.objects.bulk_create(wanted, ignore_conflicts=True)
        pending = list(
            Notification.objects.filter(about, kind=kind.name, status=Status.PENDING).order_by("pk")
        )
        covered = queued(pending)
        groups: dict[object, list[Notification]] = {}
        for notification in pending:
            if notification.pk not in covered:
                key = notification.recipient if digest else notification.pk
                groups.setdefault(key, []).append(notification)
        return publish_sends(
            kind.send_event, [(group, _payload(group)) for group in groups.values()]
        )


def notifications_fan_out(*, import_id: int) -> int:
    """The notifications of an import's outcome and their send events (fan_out)."""
    price_import = PriceImport.objects.select_related("message").get(pk=import_id)
    return fan_out(IMPORT_OUTCOME, [(price_import, price_import.status)])


def notifications_fan_out_message(*, message_id: int) -> int:
    """The notifications of the outcomes of every finished import of a message (one per
    import, recipient and outcome, as for a single import) and one send event per
    recipient: one digest mail covering all of them, or the single mail when a recipient
    has only one (fan_out)."""
    imports = list(
        PriceImport.objects.select_related("message")
        .defer("message__raw", "message__match_report")
        .filter(message_id=message_id, status__in=FINAL)
        .order_by("pk")
    )
    return fan_out(IMPORT_OUTCOME, [(i, i.status) for i in imports], digest=True)


# -- the mail -------------------------------------------------------------------------------


def _message_id_domain() -> str:
    return settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip(">") or "pricefeed.local"


def _message_id_parts(kind: Kind, domain: str) -> tuple[str, str]:
    """What comes before and after the notification id in a Message-ID of ``kind``:
    written here once, for message_id and for the SQL that records a batch as sent
    (_mark_sent)."""
    return f"<{kind.message_id_prefix}.", f"@{domain}>"


def message_id(kind: Kind, pk: int, domain: str | None = None) -> str:
    """The Message-ID of the mail that delivers notification ``pk`` of ``kind`` (a
    digest's is that of its first notification)."""
    before, after = _message_id_parts(kind, domain or _message_id_domain())
    return f"{before}{pk}{after}"


def message_id_for(notification: Notification) -> str:
    return message_id(kind_for(notification.kind), notification.pk)


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


def render(
    kind: Kind, subjects: Sequence[Any], language: str | None = None
) -> tuple[str, str, str]:
    """(subject, plain text, HTML) of the mail of ``kind`` about ``subjects``, in
    ``language`` (the default language when None)."""
    language = mail_language(language)
    with translation.override(language):
        template, context = kind.mail(subjects)
        return _render(template, {**context, "language": language})


def render_outcome(price_import: PriceImport, language: str | None = None) -> tuple[str, str, str]:
    """The mail about an import's outcome (render)."""
    return render(IMPORT_OUTCOME, [price_import], language)


def build_email(notification: Notification, connection=None) -> EmailMultiAlternatives:
    """The mail for one notification about an import, built the plain Django way (the
    reference that PreparedMail reproduces byte for byte, faster)."""
    language = mail_language(notification.language)
    assert notification.price_import is not None
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


def _smtp_connections(mails: int) -> int:
    """How many SMTP connections a batch of ``mails`` is spread over: the send path waits
    on the server's replies, so a few connections overlap those waits; a small batch
    keeps to one."""
    most = max(1, settings.PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS)
    return max(1, min(most, mails // MAILS_PER_CONNECTION))


MAILS_PER_CONNECTION = 10  # fewer than this per extra connection: not worth its handshake


class Reply(NamedTuple):
    """The server's reply to a mail it took (code "" and no text from a backend that
    is not SMTP: locmem, console)."""

    code: str
    text: str


NO_REPLY = Reply("", "")

# Per event: the server's reply to its mail, or the exception that stopped it.
Outcomes = dict[uuid.UUID, BaseException | Reply]


def _data_replies(connection: Any) -> list[tuple[int, bytes]]:
    """The replies to DATA on ``connection`` (a Django mail backend) from now on, in
    order: smtplib's ``sendmail`` checks the 250 and drops it, so the SMTP connection's
    ``data`` is wrapped to keep it. Another backend: none, ever."""
    replies: list[tuple[int, bytes]] = []
    smtp = getattr(connection, "connection", None)
    if isinstance(smtp, smtplib.SMTP):
        data = smtp.data

        def kept(msg: Any) -> tuple[int, bytes]:
            reply = data(msg)
            replies.append(reply)
            return reply

        smtp.data = kept  # type: ignore[method-assign]
    return replies


def _send_over_one_connection(mails: list[tuple[uuid.UUID, EmailMultiAlternatives]]) -> Outcomes:
    """Sends ``mails`` in order over one connection of Django's configured backend (TLS
    verified, timeout set as configured); per event, the server's reply or the
    exception."""
    results: Outcomes = {}
    try:
        with get_connection(fail_silently=False) as connection:
            replies = _data_replies(connection)
            for event_id, email in mails:
                replies.clear()
                try:
                    connection.send_messages([email])
                    crash_point("notification_after_smtp")
                except Exception as exc:
                    results[event_id] = exc
                else:
                    code, text = replies[-1] if replies else (None, b"")
                    results[event_id] = (
                        Reply(str(code), server_reply(text)) if code is not None else NO_REPLY
                    )
    except Exception as exc:  # could not connect, or closing failed
        for event_id, _ in mails:
            if isinstance(results.get(event_id, exc), BaseException):
                results[event_id] = exc
    return results


def _send(mails: list[tuple[uuid.UUID, EmailMultiAlternatives]]) -> Outcomes:
    """Spreads ``mails`` over a few connections (threads that only talk SMTP; the
    database stays with the caller's thread) and gathers the outcomes."""
    count = _smtp_connections(len(mails))
    if count == 1:
        return _send_over_one_connection(mails)
    shares = [mails[i::count] for i in range(count)]
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="smtp") as pool:
        results: Outcomes = {}
        for part in pool.map(_send_over_one_connection, shares):
            results.update(part)
    return results


def send(kind: Kind, events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """Sends a batch of ``kind``'s send events; per event, None when the mail took
    effect (or had already).

    An event delivers one notification or a digest: several of one recipient in one
    mail, whose Message-ID is that of its first notification, all marked SENT together.
    Each mail is rendered once per batch and language; the mails go out over a few
    reused connections; the notifications sent are marked SENT in one UPDATE. A crash
    between the server's acceptance and that UPDATE sends those mails again on retry,
    with the same Message-ID (at least once, never a different mail).
    """
    wanted = {event.id: notification_ids(event.payload) for event in events}
    subject_id = f"{kind.subject}_id"
    notifications = {
        n.pk: n
        for n in Notification.objects.only(
            subject_id, "recipient", "outcome", "status", "language"
        ).filter(pk__in={pk for ids in wanted.values() for pk in ids})
    }
    # A batch is mostly about one subject or a few: each is loaded once, not per row.
    subjects = kind.load({getattr(n, subject_id) for n in notifications.values()})
    domain = _message_id_domain()
    results: dict[uuid.UUID, BaseException | None] = {}
    mails: dict[tuple, PreparedMail] = {}  # one per subjects, outcomes and language
    to_send: list[tuple[uuid.UUID, EmailMultiAlternatives]] = []
    # The notifications each event's mail delivers (those not yet SENT).
    covered: dict[uuid.UUID, list[Notification]] = {}
    for event in events:
        ids = wanted[event.id]
        pending = [
            notifications[pk]
            for pk in ids
            if pk in notifications and notifications[pk].status != Status.SENT
        ]
        if not pending:
            results[event.id] = None  # gone, or already took effect: nothing to send
            continue
        covered[event.id] = pending
        # One recipient's notifications: their fan-out gave them one language (should
        # an older one differ, the first one's is used).
        language = mail_language(pending[0].language)
        key = (language, tuple((getattr(n, subject_id), n.outcome) for n in pending))
        try:
            if key not in mails:
                about = [subjects[getattr(n, subject_id)] for n in pending]
                mails[key] = PreparedMail(*render(kind, about, language), language=language)
            email = mails[key].email(
                recipient=pending[0].recipient, message_id=message_id(kind, min(ids), domain)
            )
        except Exception as exc:  # a template or header that cannot be made
            results[event.id] = exc
            continue
        to_send.append((event.id, email))
    replies: dict[uuid.UUID, Reply] = {}
    for event_id, outcome in (_send(to_send) if to_send else {}).items():
        if isinstance(outcome, Reply):
            replies[event_id], results[event_id] = outcome, None
        else:
            results[event_id] = outcome
    _mark_sent(kind, wanted, covered, replies, domain)
    _record_failures(events, covered, results)
    return results


def _mark_sent(
    kind: Kind,
    wanted: dict[uuid.UUID, list[int]],
    covered: dict[uuid.UUID, list[Notification]],
    replies: dict[uuid.UUID, Reply],
    domain: str,
) -> None:
    """The notifications whose mail took effect → SENT, with its Message-ID: those
    delivered alone in one UPDATE (the Message-ID made in SQL as message_id makes it),
    each digest's together; and an accepted attempt each, with the server's reply, in
    one INSERT, in the same transaction."""
    done = [event_id for event_id in covered if event_id in replies]
    if not done:
        return
    single = [covered[e][0].pk for e in done if len(wanted[e]) == 1]
    sent = {"status": Status.SENT, "sent_at": Now(), "attempts": F("attempts") + 1}
    marked = 0
    with transaction.atomic():
        if single:
            before, after = _message_id_parts(kind, domain)
            marked += Notification.objects.filter(pk__in=single, status=Status.PENDING).update(
                message_id=Concat(
                    Value(before), Cast("pk", output_field=CharField()), Value(after)
                ),
                **stored("last_error", ""),
                **sent,
            )
        for event_id in done:
            if len(wanted[event_id]) == 1:
                continue
            marked += Notification.objects.filter(
                pk__in=[n.pk for n in covered[event_id]], status=Status.PENDING
            ).update(
                message_id=message_id(kind, min(wanted[event_id]), domain),
                **stored("last_error", ""),
                **sent,
            )
        DeliveryAttempt.objects.bulk_create(
            _attempt(n, Attempt.ACCEPTED, replies[e].code, replies[e].text)
            for e in done
            for n in covered[e]
        )
    metrics.NOTIFICATIONS_SENT.inc(marked)


def _attempt(notification: Notification, outcome: str, code: str, reply: object) -> DeliveryAttempt:
    """One attempt's record; ``reply`` (the server's text or the error) as core.texts
    stores it, a server's words cut as every foreign value is."""
    return DeliveryAttempt(
        notification=notification, outcome=outcome, code=code, **stored("reply", reply)
    )


def _record_failures(
    events: list[OutboxEvent],
    covered: dict[uuid.UUID, list[Notification]],
    results: dict[uuid.UUID, BaseException | None],
) -> None:
    """Each failed mail's notifications: one more attempt and its error (on the
    notification, and as a refused attempt, in one transaction); FAILED past the
    outbox's last attempt. Only the latest DeliveryAttempt.KEPT attempts of each are
    kept (a notification requeued again and again would gather them without end)."""
    last_attempt = outbox_retry_policy().max_attempts
    attempts = {event.id: event.attempts for event in events}
    for event_id, error in results.items():
        if error is None or event_id not in covered:
            continue
        given_up = attempts[event_id] >= last_attempt
        ids = [n.pk for n in covered[event_id]]
        reason = error_text(error)
        with transaction.atomic():
            marked = Notification.objects.filter(pk__in=ids).update(
                attempts=F("attempts") + 1,
                **stored("last_error", reason, limit=2000),
                **({"status": Status.FAILED} if given_up else {}),
            )
            outcome = Attempt.FAILED if given_up else Attempt.REFUSED
            code = smtp_code(error)
            DeliveryAttempt.objects.bulk_create(
                _attempt(n, outcome, code, reason) for n in covered[event_id]
            )
            _prune_attempts(ids)
        metrics.NOTIFICATION_SEND_ERRORS.inc(marked)
        if given_up:
            metrics.NOTIFICATIONS_FAILED.inc(marked)


def _prune_attempts(notification_ids: list[int]) -> None:
    """All but the latest DeliveryAttempt.KEPT attempts of these notifications go."""
    kth_latest = (
        DeliveryAttempt.objects.filter(notification=OuterRef("notification"))
        .order_by("-pk")
        .values("pk")[DeliveryAttempt.KEPT - 1 : DeliveryAttempt.KEPT]
    )
    DeliveryAttempt.objects.filter(
        notification__in=notification_ids, pk__lt=Subquery(kth_latest)
    ).delete()


def notifications_send(events: list[OutboxEvent]) -> dict[uuid.UUID, BaseException | None]:
    """The send path for mails about import outcomes (send)."""
    return send(IMPORT_OUTCOME, events)
