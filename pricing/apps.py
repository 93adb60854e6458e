from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PricingConfig(AppConfig):
    """Rates (the bank's daily and manual ones), suppliers' terms, and conversion to
    roubles at a list's date; later offers and price rules."""

    name = "pricing"
    verbose_name = _("Pricing")

    def ready(self) -> None:
        from core import sweeps

        from . import handlers, offers, services, signals

        del handlers, signals  # imported for their outbox handlers and receivers

        # Every listen_mail supervisor checks whether today's or tomorrow's rates are due
        # and hands a due fetch to the queue (services.rates_sweep).
        sweeps.register("rates", services.rates_sweep)
        # ... and whether a supplier's list went stale (its offers then stop counting).
        sweeps.register("offers_stale", offers.stale_sweep)
