from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccessConfig(AppConfig):
    """Who may do what in the admin: the role groups (roles.py) and the restriction of
    django-q2's admin to superusers where it runs arbitrary functions (admin.py)."""

    name = "access"
    verbose_name = _("Access")
