"""manage.py links_import PATH [--user NAME]: links fixed in a file exported by
links_export applied; a file with a bad row is refused whole, the reasons printed."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from products.links_transfer import LinksRefused, links_import


class Command(BaseCommand):
    help = "Applies a links file (the format links_export writes)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--user", default="", help="who confirms the links (a username)")

    def handle(self, *args, path: Path, user: str, **options) -> None:
        who = None
        if user:
            model = get_user_model()
            who = model.objects.filter(**{model.USERNAME_FIELD: user}).first()
            if who is None:
                raise CommandError(_("no user %(user)s") % {"user": user})
        if not path.is_file():
            raise CommandError(_("no file %(path)s") % {"path": path})
        try:
            done = links_import(path, user=who)
        except LinksRefused as refused:
            for reason in refused.reasons:
                self.stderr.write(reason)
            raise CommandError(
                _("%(count)s rows refused; nothing was applied") % {"count": refused.refused}
            ) from None
        self.stdout.write(
            _("%(rows)s rows read: %(changed)s links changed, %(unchanged)s unchanged")
            % {"rows": done.rows, "changed": done.changed, "unchanged": done.unchanged}
        )
