"""The kinds of notification: each one a spec, and one send path for all of them.

A kind says what its mails are about and how they are made; everything else — the
Notification rows (one per kind, subject, recipient and outcome), the outbox send event,
the batch rendering, the SMTP connections, the Message-ID, the retries, FAILED and the
error format — is the same for every kind (notifications.services). A new kind is a
``Kind`` registered here, its three templates (``<template>_subject.txt``, ``.txt`` and
``.html``) and a migration (its subscription flag, and its subject's field on
Notification when that is a new model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Model, QuerySet
from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _


def _no_sender(subject: Any) -> str:
    return ""


@dataclass(frozen=True)
class Kind:
    """One kind of notification.

    ``name`` is stored in Notification.kind; ``label`` names it in the admin.
    ``subject`` is the Notification field naming the row a mail is about, whose model's
    rows ``subjects`` reads (with what ``mail`` needs); their ``config_id`` says whose
    subscribers hear of them. ``subscription_flag`` is the Subscription field that asks
    for these mails ("{outcome}" stands for the outcome in lower case: ``on_failed``).
    ``sender`` gives the address a subscription that replies to the sender writes to (""
    when there is none). ``mail`` gives the template and its context for the subjects
    one mail is about (several: a digest), in the active language. ``send_event`` is the
    outbox event kind that delivers these mails; ``message_id_prefix`` begins their
    Message-ID (``<prefix.{notification id}@{domain}>``)."""

    name: str
    label: str | Promise
    subject: str
    subjects: Callable[[], QuerySet]
    subscription_flag: str
    mail: Callable[[Sequence[Any]], tuple[str, dict]]
    send_event: str
    message_id_prefix: str
    sender: Callable[[Any], str] = _no_sender

    def flag(self, outcome: str) -> str:
        return self.subscription_flag.format(outcome=outcome.lower())

    def load(self, ids: set[int]) -> dict[int, Model]:
        """The subjects with these primary keys."""
        return {subject.pk: subject for subject in self.subjects().filter(pk__in=ids)}


_kinds: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Makes ``kind`` known: its notifications can be made, shown and sent (its send
    events are handled by the one send path)."""
    from outbox.handlers import handler

    from . import services

    def send(events):
        return services.send(kind, events)

    _kinds[kind.name] = kind
    handler(
        kind.send_event, label=format_lazy(_("sending a notification ({kind})"), kind=kind.label)
    )(send)
    return kind


def unregister(kind: Kind) -> None:
    """Forgets ``kind`` (for a kind registered by a test)."""
    from outbox.handlers import _handlers

    _kinds.pop(kind.name, None)
    _handlers.pop(kind.send_event, None)


def kind_for(name: str) -> Kind:
    return _kinds[name]


def kinds() -> list[Kind]:
    return list(_kinds.values())


def kind_label(name: str) -> str:
    kind = _kinds.get(name)
    return str(kind.label) if kind is not None else name
