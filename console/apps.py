from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConsoleConfig(AppConfig):
    """The admin's front page: counts, charts and listeners above the app list. No
    models; it reads every app through that app's selectors or its own aggregates over
    the apps' models (``console.selectors``)."""

    name = "console"
    verbose_name = _("Operator console")
