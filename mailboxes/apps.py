from django.apps import AppConfig


class MailboxesConfig(AppConfig):
    name = "mailboxes"
    verbose_name = "Mailboxes and inbound mail"

    def ready(self) -> None:
        from core import sweeps, workers

        from . import processing, signals

        signals.connect()
        sweeps.register("messages", processing.messages_sweep)
        # Messages are processed by django-q2 workers: a dead one's claims are reaped.
        workers.watch("messages", processing.MESSAGE_WORK)
