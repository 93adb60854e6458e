from django.apps import AppConfig


class MailboxesConfig(AppConfig):
    name = "mailboxes"
    verbose_name = "Mailboxes and inbound mail"

    def ready(self) -> None:
        from core import sweeps

        from . import processing, signals

        signals.connect()
        sweeps.register("messages", processing.messages_sweep)
