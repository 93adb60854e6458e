"""manage.py products_load PATH [--dry-run] [--no-retire] [--own-code id|article|code]:
loads our catalogue (products.loading) and prints what it added, changed, retired and
refused, in the operators' language."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from products.loaders import FORMATS, OWN_CODES, CatalogueRefused
from products.loading import LoadResult, products_load


class Command(BaseCommand):
    help = (
        "Loads our catalogue from our template (CSV or xlsx), a CommerceML 2 import.xml or "
        "a Yandex YML file (recognised by content): adds, changes and retires products."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Reads and compares everything, prints what would change, writes nothing.",
        )
        parser.add_argument(
            "--no-retire",
            action="store_true",
            help="A partial file: products it does not list are kept, not retired.",
        )
        parser.add_argument(
            "--own-code",
            choices=OWN_CODES,
            default="id",
            help="CommerceML: our code is the Товар's Ид (default), Артикул or its requisite Код.",
        )

    def handle(self, *args, path: str, dry_run: bool, no_retire: bool, own_code: str, **options):
        try:
            result = products_load(path, retire=not no_retire, dry_run=dry_run, own_code=own_code)
        except CatalogueRefused as exc:
            raise CommandError(_("The file is not loaded: %(reason)s") % {"reason": exc}) from None
        self.report(result)

    def report(self, result: LoadResult) -> None:
        out = self.stdout.write
        label = next((f.label for f in FORMATS if f.name == result.format), result.format)
        out(_("Format: %(format)s") % {"format": label})
        for note in result.notes:
            out(_("Note: %(note)s") % {"note": note})
        out(_("Products read: %(count)s") % {"count": result.read})
        out(_("Added: %(count)s") % {"count": result.added})
        out(
            _("Changed: %(count)s (active again: %(reactivated)s)")
            % {"count": result.changed, "reactivated": result.reactivated}
        )
        out(_("Retired: %(count)s") % {"count": result.retired})
        out(_("Unchanged: %(count)s") % {"count": result.unchanged})
        out(_("Refused lines: %(count)s") % {"count": result.refused})
        self.problems(result, refused=True)
        out(_("Values dropped: %(count)s") % {"count": result.flagged})
        self.problems(result, refused=False)
        if result.dry_run:
            out(_("Dry run: nothing was written."))

    def problems(self, result: LoadResult, *, refused: bool) -> None:
        shown = [p for p in result.problems if p.refused == refused]
        for problem in shown:
            self.stdout.write(
                "  " + _("line %(line)s: %(reason)s") % {"line": problem.line, "reason": problem}
            )
        total = result.refused if refused else result.flagged
        if total > len(shown):
            self.stdout.write("  " + _("… and %(count)s more") % {"count": total - len(shown)})
