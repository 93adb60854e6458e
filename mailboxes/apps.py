from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class MailboxesConfig(AppConfig):
    name = "mailboxes"
    verbose_name = _("Mailboxes and inbound mail")

    def ready(self) -> None:
        from core import brokers, crypto, sweeps, taskresults, workers

        # texts registers the templates of the texts shown translated (core.texts).
        from . import processing, signals, texts  # noqa: F401

        signals.connect()
        sweeps.register("messages", processing.messages_sweep)
        # django-q2's successful results, pruned here rather than by its monitor.
        sweeps.register("task results", taskresults.successes_prune)
        # Messages are processed by django-q2 workers: a dead one's claims are reaped.
        workers.watch("messages", processing.MESSAGE_WORK)
        checks.register(imap_allowed_networks, checks.Tags.security)
        # Mailbox passwords are stored under these keys: every command refuses to start
        # in production without valid ones.
        checks.register(crypto.check_encryption_keys, checks.Tags.security)
        # The broker every process hands work to: its client library must be there.
        checks.register(workers.check_broker)
        # ... and in production it must not be open to the network.
        checks.register(brokers.check_redis_security, checks.Tags.security)


def imap_allowed_networks(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Every command refuses to start with a PRICEFEED_IMAP_ALLOWED_NETWORKS entry that
    is not a network (each connection would fail with it)."""
    from django.conf import settings

    from .addresses import parse_networks
    from .exceptions import ImapSettingsError

    try:
        parse_networks(settings.PRICEFEED_IMAP_ALLOWED_NETWORKS)
    except ImapSettingsError as exc:
        return [checks.Error(str(exc), hint="e.g. 10.20.0.0/16,127.0.0.1", id="mailboxes.E001")]
    return []
