from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "outbox"

    def ready(self) -> None:
        from . import handlers  # noqa: F401 - registers the built-in handlers
