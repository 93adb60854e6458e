from django.apps import AppConfig
from django.core import checks


class PricefeedConfig(AppConfig):
    name = "pricefeed"
    verbose_name = "Price lists"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (connects the receivers)

        checks.register(xml_defences, checks.Tags.security)


def xml_defences(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """openpyxl guards against XML bombs only with defusedxml active: refuse to run without."""
    from pricefeed.parsing import check_xml_defences

    return [
        checks.Error(problem, hint="pip install defusedxml", id="pricefeed.E001")
        for problem in check_xml_defences()
    ]
