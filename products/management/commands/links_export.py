"""manage.py links_export PATH: every link, and every unlinked line of a current
catalogue, as CSV (UTF-8, ``;``) or xlsx (PATH ending .xlsx)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from products.links_transfer import links_export


class Command(BaseCommand):
    help = "Writes every link (config;supplier_sku;own_code;state;kind;confidence) to PATH."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path)

    def handle(self, *args, path: Path, **options) -> None:
        try:
            count = links_export(path)
        except OSError as exc:
            raise CommandError(
                _("cannot write %(path)s: %(error)s") % {"path": path, "error": exc.strerror}
            ) from None
        self.stdout.write(_("%(count)s rows written to %(path)s") % {"count": count, "path": path})
