from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeliveryConfig(AppConfig):
    name = "delivery"
    label = "delivery"
    verbose_name = _("Event delivery")

    def ready(self) -> None:
        # handlers registers the outbox handlers (the fan-outs and the two send paths);
        # texts how a delivery's errors are stored (core.texts).
        from . import handlers, texts  # noqa: F401
