from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MonitoringConfig(AppConfig):
    """What orchestrators and operators ask of a running pricefeed: the probes /healthz
    and /readyz (middleware.py, probes.py), /metrics (metrics.py) and
    ``manage.py pricefeed_status`` (status.py). No models; reads every app through that
    app's selectors."""

    name = "monitoring"
    verbose_name = _("Monitoring")

    def ready(self) -> None:
        # The metrics port of listen_mail and dispatch_outbox (core.metrics_server)
        # answers what /metrics does, state gauges included; core cannot import them.
        from core import metrics as core_metrics

        from . import metrics

        core_metrics.set_exposition(metrics.exposition)
