from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """What orchestrators and operators ask of a running pricefeed: the probes /healthz
    and /readyz (middleware.py, probes.py) and ``manage.py pricefeed_status``
    (status.py). No models; reads every app through that app's selectors."""

    name = "monitoring"
    verbose_name = "Monitoring"
