from django.apps import AppConfig


class MailboxesConfig(AppConfig):
    name = "mailboxes"
    verbose_name = "Mailboxes and inbound mail"

    def ready(self) -> None:
        from . import signals

        signals.connect()
