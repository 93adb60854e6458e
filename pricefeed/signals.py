"""A price import's items go with it.

PriceItem.price_import is DO_NOTHING (no database foreign key and no index of its own:
see PriceItem), so the ORM's cascade would look the items up by a full scan. They are
deleted here instead, by their key range, in the transaction that deletes the import.
"""

from __future__ import annotations

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from .models import PriceImport, PriceItem


@receiver(pre_delete, sender=PriceImport, dispatch_uid="pricefeed.price_items_delete")
def price_items_delete(sender, instance: PriceImport, using: str, **kwargs) -> None:
    PriceItem.objects.using(using).of_import(instance.pk).delete()
    # Its catalogue entries went with its items; those it ended stay ended, by no import.
    PriceItem.objects.using(using).filter(
        config_id=instance.config_id, valid_to__isnull=False, ended_by_id=instance.pk
    ).update(ended_by=None)
