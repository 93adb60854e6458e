from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OutboxConfig(AppConfig):
    name = "outbox"
    verbose_name = _("Outbox")

    def ready(self) -> None:
        from . import handlers  # noqa: F401 - registers the built-in handlers
