from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = _("Notifications")

    def ready(self) -> None:
        from . import checks as notification_checks
        from . import handlers  # noqa: F401 - registers the outbox handlers

        checks.register(notification_checks.public_url)
