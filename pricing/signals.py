"""A supplier's price-list config deleted takes its offers with it (the database's
cascade, with no refresh of the products they were for): where it had offers, every
price is computed again, as when a supplier's terms change. A price may name that
supplier's offer as the best, and every product's choice counted its offers; a
supplier's refresh reads what a price says of the other suppliers (offers.KNOWN_SQL)."""

from __future__ import annotations

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from pricefeed.models import PriceListConfig

from . import offers
from .models import Offer


@receiver(pre_delete, sender=PriceListConfig, dispatch_uid="pricing.config_deleted")
def config_deleted(sender, instance: PriceListConfig, using: str, **kwargs) -> None:
    if Offer.objects.using(using).filter(config_id=instance.pk).exists():
        offers.refresh_requested("suppliers")
