"""Running listeners hear of mailbox and config changes at once (PostgreSQL NOTIFY);
elsewhere they notice at their next poll."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save

from pricefeed.pgnotify import notify_on_commit

from .leases import CHANNEL


def _changed(sender, **kwargs) -> None:
    notify_on_commit(CHANNEL, "config")


def connect() -> None:
    from pricefeed.models import PriceListConfig

    from .models import Mailbox

    for model in (Mailbox, PriceListConfig):
        post_save.connect(_changed, sender=model, dispatch_uid=f"listeners-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"listeners-{model.__name__}-d")
