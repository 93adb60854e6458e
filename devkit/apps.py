from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DevkitConfig(AppConfig):
    name = "devkit"
    verbose_name = _("Development kit")
