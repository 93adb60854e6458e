"""``manage.py rates_fetch [--date YYYY-MM-DD]``: the bank's rates for a day, now."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from pricing.models import RateFetch
from pricing.services import bank_today, rates_fetch


class Command(BaseCommand):
    help = "Fetches the Bank of Russia's rates for a day (default today) and stores them."

    def add_arguments(self, parser):
        parser.add_argument("--date", help="the day, YYYY-MM-DD (default: today in Moscow)")

    def handle(self, *args, **options):
        try:
            day = date.fromisoformat(options["date"]) if options["date"] else bank_today()
        except ValueError:
            raise CommandError(f"--date {options['date']!r}: expected YYYY-MM-DD") from None
        if not settings.PRICEFEED_RATES_URL:
            raise CommandError("PRICEFEED_RATES_URL is empty: rates are not fetched")
        fetch, stored = rates_fetch(day)
        if stored is None:
            raise CommandError(
                f"rates for {day.isoformat()} not fetched: "
                f"{RateFetch.Problem(fetch.problem).label} ({fetch.detail})"
            )
        self.stdout.write(
            f"rates for {day.isoformat()}: in effect from {fetch.effective}, "
            f"{fetch.rates} currencies, {stored.added} added, {stored.changed} changed"
        )
