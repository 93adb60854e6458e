from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ApiConfig(AppConfig):
    """The read-only API under /api/ for buyers and downstream systems: configs, imports
    and their items, a config's catalogue, a SKU's history and the changes since a
    moment, in JSON, with an OpenAPI 3 schema. Programs sign in with an API token
    (``ApiToken``), people with their admin session; either way the user's model view
    permissions decide what it may read."""

    name = "api"
    verbose_name = _("API")

    def ready(self) -> None:
        from . import schema  # noqa: F401 - registers the token scheme with drf-spectacular
