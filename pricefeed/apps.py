from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class PricefeedConfig(AppConfig):
    name = "pricefeed"
    verbose_name = _("Price lists")

    def ready(self) -> None:
        from core import sweeps, workers
        from mailboxes import processing, weights
        from mailboxes.signals import notify_listeners_on_change

        # signals connects receivers; texts registers the templates of the texts shown
        # translated (core.texts).
        from . import overdue, selectors, signals, texts  # noqa: F401
        from .imports import lifecycle
        from .models import PriceListConfig

        # The seams of the apps below: who processes a recorded message, what a mailbox
        # weighs and when it is worth listening to, what is swept, which changes running
        # listeners must hear of.
        processing.set_message_task("pricefeed.tasks.process_message")
        weights.set_default_weight(selectors.enabled_configs_count)
        weights.set_wanted(selectors.has_enabled_config)
        sweeps.register("imports", lifecycle.price_imports_sweep)
        sweeps.register("overdue lists", overdue.overdue_sweep)
        workers.watch("imports", lifecycle.IMPORT_WORK)
        notify_listeners_on_change(PriceListConfig)
        checks.register(xml_defences, checks.Tags.security)


def xml_defences(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """openpyxl guards against XML bombs only with defusedxml active: refuse to run without."""
    from pricefeed.parsing import check_xml_defences

    return [
        checks.Error(problem, hint="pip install defusedxml", id="pricefeed.E001")
        for problem in check_xml_defences()
    ]
