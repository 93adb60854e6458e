"""Running listeners hear of mailbox changes at once (PostgreSQL NOTIFY); elsewhere
they notice at their next poll. Apps whose models change what is listened to (pricefeed's
configs) connect ``listeners_changed`` to their own models."""

from __future__ import annotations

from django.db.models import Model
from django.db.models.signals import post_delete, post_save

from core.pgnotify import notify_on_commit

from .leases import CHANNEL
from .models import Mailbox


def listeners_changed(sender: type[Model], **kwargs: object) -> None:
    notify_on_commit(CHANNEL, "config")


def notify_listeners_on_change(model: type[Model]) -> None:
    """Saving or deleting a ``model`` row tells running listeners to reconcile."""
    name = model._meta.label_lower
    post_save.connect(listeners_changed, sender=model, dispatch_uid=f"listeners-{name}")
    post_delete.connect(listeners_changed, sender=model, dispatch_uid=f"listeners-{name}-d")


def connect() -> None:
    notify_listeners_on_change(Mailbox)
