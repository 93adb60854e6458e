from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = _("Notifications")

    def ready(self) -> None:
        from . import checks as notification_checks

        # handlers registers the outbox handlers; texts the templates of the texts shown
        # translated (core.texts).
        from . import handlers, texts  # noqa: F401

        checks.register(notification_checks.public_url)
