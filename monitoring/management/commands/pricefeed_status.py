from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from core.reporting import mask_url_passwords
from monitoring.status import EXIT_BROKERS, EXIT_STUCK, EXIT_UNLISTENED, status_report


class Command(BaseCommand):
    help = (
        "How pricefeed stands: listen_mail instances and leases; inbound messages, price "
        "imports and outbox events by status with the stuck, failed and oldest due; failed "
        f"notifications. Exit status 0 when all is well, +{EXIT_STUCK} when work is stuck, "
        f"+{EXIT_UNLISTENED} when an enabled mailbox has no live listener, +{EXIT_BROKERS} "
        "when live processes use different django-q2 brokers; 1 when the "
        "status cannot be read."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="One JSON object, for scripts.")

    def handle(self, *args, **options):
        try:
            report = status_report()
        except DatabaseError as exc:
            detail = " ".join(str(exc).split())  # psycopg's hint comes on a line of its own
            raise CommandError(
                mask_url_passwords(f"cannot read the status from the database: {detail}")
            ) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write(report.as_text())
        if report.exit_code:
            self.stdout.flush()
            sys.exit(report.exit_code)
