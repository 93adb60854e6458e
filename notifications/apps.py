from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"

    def ready(self) -> None:
        from . import handlers  # noqa: F401 - registers the outbox handlers
