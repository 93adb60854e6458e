"""The bank's rates fetched and stored, and the sweep that keeps today's and tomorrow's
asked for.

``rates_sweep`` (every ``listen_mail`` supervisor runs it, pricing.apps) makes a fetch
row for today and tomorrow (Moscow's dates: the bank's) and claims each one due with a
conditional UPDATE that pushes its next attempt a lease ahead, so one instance of many
enqueues it; a task lost with its worker is asked again when the lease is over. The
task (``rates_fetch``) downloads outside any transaction, then stores the rates and the
outcome in one: stored idempotently (a currency's rate for a date and source is one row,
changed only when the bank's value changed), a failure counted and retried with
backoff, shown in the admin (RateFetch) and logged at ERROR.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from core import metrics
from core.dbtime import db_now_plus
from core.retry import Backoff

from . import offers
from .cbr import DailyRates, Fetcher, RatesError
from .models import Offer, Rate, RateFetch

logger = logging.getLogger(__name__)

FETCH_TASK = "pricing.tasks.rates_fetch_task"
# The bank's dates are Moscow's, whatever TIME_ZONE the server keeps.
BANK_ZONE = ZoneInfo("Europe/Moscow")
# A claimed fetch whose task has not reported for this long is asked again (the worker
# died); longer than a fetch's timeouts can take.
LEASE_SECONDS = 600
# Tomorrow's rates are set in the afternoon of a working day (none on a weekend): until
# the bank answers with tomorrow's date, ask again this often.
RECHECK_SECONDS = 3600


@dataclass(frozen=True)
class Stored:
    """What storing one answer did: rates added, rates changed (the bank corrected a
    value), rates already stored as they are."""

    added: int
    changed: int
    unchanged: int


def bank_today() -> date:
    return timezone.now().astimezone(BANK_ZONE).date()


def fetcher() -> Fetcher:
    return Fetcher(
        url=settings.PRICEFEED_RATES_URL,
        timeout=settings.PRICEFEED_RATES_TIMEOUT,
        allow_plain=settings.PRICEFEED_RATES_ALLOW_PLAIN,
    )


def retry_backoff() -> Backoff:
    return Backoff(settings.PRICEFEED_RATES_RETRY_BASE, settings.PRICEFEED_RATES_RETRY_MAX)


def rates_store(daily: DailyRates) -> Stored:
    """Stores the bank's rates of one answer under their effective date; storing the same
    answer again changes nothing."""
    with transaction.atomic():
        stored = {
            rate.currency: rate
            for rate in Rate.objects.select_for_update().filter(
                date=daily.effective, source=Rate.Source.CBR
            )
        }
        new = [
            Rate(currency=code, date=daily.effective, rate=value, source=Rate.Source.CBR)
            for code, value in daily.rates.items()
            if code not in stored
        ]
        Rate.objects.bulk_create(new, ignore_conflicts=True)
        changed = 0
        for code, value in daily.rates.items():
            if code in stored and stored[code].rate != value:
                Rate.objects.filter(pk=stored[code].pk).update(rate=value, created_at=Now())
                changed += 1
        if (new or changed) and offers_affected(daily.effective):
            offers.refresh_requested("rates")
    return Stored(added=len(new), changed=changed, unchanged=len(daily.rates) - len(new) - changed)


def offers_affected(effective: date) -> bool:
    """Whether rates in effect from ``effective`` may change an offer: one waits for a
    rate, or a list is dated that day or later (a list keeps the rate of its date)."""
    return Offer.objects.filter(
        Q(status=Offer.Status.NO_RATE) | Q(rate_date__isnull=False, list_date__date__gte=effective)
    ).exists()


def rates_fetch(day: date) -> tuple[RateFetch, Stored | None]:
    """Asks the bank for ``day``'s rates, stores them and records the outcome on the
    day's RateFetch row (made if missing); returns the row and what was stored (None
    when the fetch failed)."""
    RateFetch.objects.get_or_create(date=day)
    try:
        daily = fetcher().fetch(day)
    except RatesError as error:
        return _failed(day, error), None
    stored = rates_store(daily)
    waiting = daily.effective < day and day > bank_today()
    RateFetch.objects.filter(date=day).update(
        status=RateFetch.Status.PENDING if waiting else RateFetch.Status.DONE,
        effective=daily.effective,
        rates=len(daily.rates),
        attempts=0,
        problem="",
        detail="",
        next_attempt_at=db_now_plus(RECHECK_SECONDS) if waiting else None,
        updated_at=Now(),
    )
    logger.info(
        "rates fetched date=%s effective=%s added=%s changed=%s",
        day.isoformat(),
        daily.effective.isoformat(),
        stored.added,
        stored.changed,
        extra={"action": "rates_fetch"},
    )
    return RateFetch.objects.get(date=day), stored


def _failed(day: date, error: RatesError) -> RateFetch:
    with transaction.atomic():
        attempts = RateFetch.objects.select_for_update().get(date=day).attempts + 1
        # Backoff on the database's clock, as the sweep compares it with the database's.
        RateFetch.objects.filter(date=day).update(
            attempts=attempts,
            status=RateFetch.Status.FAILED,
            problem=error.code,
            detail=error.detail,
            next_attempt_at=db_now_plus(retry_backoff().delay(attempts)),
            updated_at=Now(),
        )
    fetch = RateFetch.objects.get(date=day)
    metrics.RATE_FETCH_FAILURES.labels(problem=error.code).inc()
    logger.error(
        "rates fetch failed date=%s problem=%s detail=%s attempts=%s",
        day.isoformat(),
        error.code,
        error.detail,
        fetch.attempts,
        extra={"action": "rates_fetch_failed"},
    )
    return fetch


def enqueue_fetch(day: date) -> None:
    from django_q.tasks import async_task

    async_task(FETCH_TASK, day.isoformat(), task_name=f"rates_fetch {day.isoformat()}")


def rates_due_claim(days: list[date]) -> list[date]:
    """Of ``days``, those whose fetch is due now, each claimed for a lease (a row made
    for a day that has none); two instances never both claim one."""
    claimed = []
    for day in days:
        RateFetch.objects.get_or_create(date=day)
        due = Q(next_attempt_at=None) | Q(next_attempt_at__lte=Now())
        updated = (
            RateFetch.objects.filter(due, date=day)
            .exclude(status=RateFetch.Status.DONE)
            .update(next_attempt_at=db_now_plus(LEASE_SECONDS))
        )
        if updated:
            claimed.append(day)
    return claimed


def rates_sweep() -> None:
    """The sweep: today's and tomorrow's fetches, when due, handed to the queue; none
    when ``PRICEFEED_RATES_URL`` is empty (rates entered by hand only)."""
    if not settings.PRICEFEED_RATES_URL:
        return
    today = bank_today()
    for day in rates_due_claim([today, today + timedelta(days=1)]):
        enqueue_fetch(day)
