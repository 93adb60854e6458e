from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProductsConfig(AppConfig):
    """The distributor's own catalogue (Product) and the supplier lines linked to it
    (SupplierLink, with its history in LinkEvent)."""

    name = "products"
    verbose_name = _("Our products")

    def ready(self) -> None:
        # The links' admin and the review queue: after the admin's autodiscovery
        # (products/admin.py), whose product admin it then does not replace. handlers
        # registers the outbox handler that matches an accepted import's lines.
        from . import admin_review, handlers  # noqa: F401
