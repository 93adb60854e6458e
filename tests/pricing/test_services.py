"""The bank's rates fetched from a loopback server and stored: idempotently, under the
date they take effect (a weekend keeps Friday's), failures recorded for the admin and
retried with backoff, the sweep's claims, and ``manage.py rates_fetch``."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from core.metrics import EVENTS
from devkit.servers.cbr import Answer, daily_xml
from pricing import services
from pricing.models import Rate, RateFetch

pytestmark = pytest.mark.django_db

FRI = date(2026, 12, 4)
SAT = date(2026, 12, 5)
SUN = date(2026, 12, 6)


def test_a_days_rates_are_stored_per_one_unit(cbr):
    cbr.answer(FRI, Answer(body=daily_xml(FRI, {"USD": "78,2284", "JPY": "51,2345"})))

    fetch, stored = services.rates_fetch(FRI)

    assert (fetch.status, fetch.effective, fetch.rates) == (RateFetch.Status.DONE, FRI, 2)
    assert stored == services.Stored(added=2, changed=0, unchanged=0)
    rates = dict(Rate.objects.filter(date=FRI).values_list("currency", "rate"))
    assert rates == {"USD": Decimal("78.2284"), "JPY": Decimal("0.512345")}
    assert set(Rate.objects.values_list("source", flat=True)) == {Rate.Source.CBR}


def test_fetching_the_same_day_again_changes_nothing_but_a_corrected_value(cbr):
    cbr.answer(FRI, Answer(body=daily_xml(FRI, {"USD": "78,2284", "EUR": "90,1000"})))
    services.rates_fetch(FRI)
    _, again = services.rates_fetch(FRI)
    assert again == services.Stored(added=0, changed=0, unchanged=2)

    cbr.answer(FRI, Answer(body=daily_xml(FRI, {"USD": "78,3000", "EUR": "90,1000"})))
    _, corrected = services.rates_fetch(FRI)

    assert corrected == services.Stored(added=0, changed=1, unchanged=1)
    assert Rate.objects.count() == 2
    assert Rate.objects.get(currency="USD").rate == Decimal("78.3")


def test_a_weekend_day_keeps_the_rates_set_before_it(cbr, monkeypatch):
    monkeypatch.setattr(services, "bank_today", lambda: SUN)
    cbr.answer(SAT, Answer(body=daily_xml(SAT, {"USD": "78,2284"})))
    services.rates_fetch(SAT)
    # Asked for Sunday, the bank answers with Saturday's rates under Saturday's date.
    cbr.answer(SUN, Answer(body=daily_xml(SAT, {"USD": "78,2284"})))

    fetch, stored = services.rates_fetch(SUN)

    assert (fetch.status, fetch.effective) == (RateFetch.Status.DONE, SAT)
    assert stored.added == 0
    assert list(Rate.objects.values_list("date", flat=True)) == [SAT]


def test_tomorrow_not_yet_set_is_asked_again_later(cbr, monkeypatch):
    monkeypatch.setattr(services, "bank_today", lambda: FRI)
    cbr.answer(SAT, Answer(body=daily_xml(FRI, {"USD": "78,2284"})))

    fetch, _ = services.rates_fetch(SAT)

    assert fetch.status == RateFetch.Status.PENDING
    assert fetch.effective == FRI
    assert fetch.next_attempt_at > timezone.now()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (Answer(status=500, body=b"error"), RateFetch.Problem.STATUS),
        (Answer(body=b"<html>maintenance</html>"), RateFetch.Problem.MALFORMED),
        (Answer(hang=True), RateFetch.Problem.TIMEOUT),
    ],
)
def test_a_failure_is_recorded_and_retried_with_backoff(cbr, settings, answer, problem, caplog):
    settings.PRICEFEED_RATES_RETRY_BASE = 60
    settings.PRICEFEED_RATES_RETRY_MAX = 3600
    cbr.answer(FRI, answer)
    counted = {"problem": str(problem)}
    before = EVENTS.get_sample_value("pricefeed_rate_fetch_failures_total", counted) or 0

    _, stored = services.rates_fetch(FRI)
    second, _ = services.rates_fetch(FRI)

    assert stored is None
    assert (second.status, second.problem, second.attempts) == (RateFetch.Status.FAILED, problem, 2)
    # The second delay is drawn from [60, 120) seconds: half fixed, half random.
    delay = second.next_attempt_at - timezone.now()
    assert timedelta(seconds=50) < delay <= timedelta(seconds=120)
    assert Rate.objects.count() == 0
    assert any(r.levelname == "ERROR" and "rates fetch failed" in r.message for r in caplog.records)
    assert EVENTS.get_sample_value("pricefeed_rate_fetch_failures_total", counted) == before + 2


def test_a_success_after_failures_clears_the_error(cbr):
    cbr.answer(FRI, Answer(status=500))
    services.rates_fetch(FRI)
    cbr.answer(FRI, Answer(body=daily_xml(FRI, {"USD": "78,2284"})))

    fetch, _ = services.rates_fetch(FRI)

    assert (fetch.status, fetch.attempts, fetch.problem, fetch.next_attempt_at) == (
        RateFetch.Status.DONE,
        0,
        "",
        None,
    )


@pytest.fixture
def bank_url(settings):
    settings.PRICEFEED_RATES_URL = "https://www.cbr.ru/scripts/XML_daily.asp"


@pytest.mark.usefixtures("bank_url")
def test_the_sweep_hands_today_and_tomorrow_to_the_queue_once(monkeypatch):
    queued: list[date] = []
    monkeypatch.setattr(services, "enqueue_fetch", queued.append)
    monkeypatch.setattr(services, "bank_today", lambda: FRI)

    services.rates_sweep()
    services.rates_sweep()  # claimed: nothing again until the lease is over

    assert queued == [FRI, SAT]


@pytest.mark.usefixtures("bank_url")
def test_the_sweep_leaves_done_days_and_asks_again_for_a_failed_one_when_due(monkeypatch):
    queued: list[date] = []
    monkeypatch.setattr(services, "enqueue_fetch", queued.append)
    monkeypatch.setattr(services, "bank_today", lambda: FRI)
    RateFetch.objects.create(date=FRI, status=RateFetch.Status.DONE)
    RateFetch.objects.create(
        date=SAT,
        status=RateFetch.Status.FAILED,
        next_attempt_at=timezone.now() - timedelta(seconds=1),
    )

    services.rates_sweep()

    assert queued == [SAT]


def test_the_sweep_is_registered():
    from core import sweeps

    assert sweeps.registered()["rates"] is services.rates_sweep


def test_the_task_fetches_its_day(cbr):
    from pricing.tasks import rates_fetch_task

    cbr.answer(FRI, Answer(body=daily_xml(FRI, {"USD": "78,2284"})))
    assert rates_fetch_task(FRI.isoformat()) == RateFetch.Status.DONE
    assert Rate.objects.get().currency == "USD"


def test_the_command_fetches_a_given_date(cbr):
    cbr.answer(FRI, Answer(body=daily_xml(FRI, {"USD": "78,2284", "EUR": "90,1"})))
    out = StringIO()

    call_command("rates_fetch", "--date", "2026-12-04", stdout=out)

    assert "2 added" in out.getvalue()
    assert Rate.objects.count() == 2


def test_the_command_says_why_it_failed(cbr):
    cbr.answer(FRI, Answer(status=500))
    with pytest.raises(CommandError, match="500"):
        call_command("rates_fetch", "--date", "2026-12-04")
    assert RateFetch.objects.get(date=FRI).status == RateFetch.Status.FAILED


def test_the_command_refuses_a_bad_date():
    with pytest.raises(CommandError, match="YYYY-MM-DD"):
        call_command("rates_fetch", "--date", "04.12.2026")


def test_without_a_url_the_sweep_fetches_nothing(settings, monkeypatch):
    settings.PRICEFEED_RATES_URL = ""
    queued: list[date] = []
    monkeypatch.setattr(services, "enqueue_fetch", queued.append)

    services.rates_sweep()

    assert queued == [] and not RateFetch.objects.exists()
