from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class FeedsConfig(AppConfig):
    """Our published prices as feeds at token-protected URLs (YML, CommerceML offers,
    CSV, xlsx) and customer price lists mailed on a schedule."""

    name = "feeds"
    label = "feeds"
    verbose_name = _("Feeds and customer price lists")

    def ready(self) -> None:
        from core import sweeps

        from . import customer_lists, handlers

        del handlers  # imported for its outbox handler

        # Every listen_mail supervisor looks for customer groups whose scheduled moment
        # has come and publishes one event per (group, published version).
        sweeps.register("customer lists", customer_lists.customer_lists_sweep)
