"""Overdue lists: which configs are overdue on the database's time, and the sweep that
raises one alert per config and period, published once through the outbox however
often and from however many instances it runs."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, time, timedelta

import pytest
from django.db import connection

from core import sweeps
from core.dbtime import db_now_minus
from outbox.models import OutboxEvent
from pricefeed.models import OverdueAlert, PriceImport, PriceListConfig
from pricefeed.overdue import LIST_OVERDUE_EVENT, overdue_alerts_raise, overdue_sweep
from pricefeed.selectors import overdue_configs
from tests import factories

MONDAY, THURSDAY = 1, 4
DAY = 24 * 3600


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def made_ago(config: PriceListConfig, seconds: float) -> PriceListConfig:
    """The config as if made ``seconds`` ago by the database's clock."""
    PriceListConfig.objects.filter(pk=config.pk).update(created_at=db_now_minus(seconds))
    config.refresh_from_db()
    return config


def made_at(config: PriceListConfig, moment: datetime) -> PriceListConfig:
    PriceListConfig.objects.filter(pk=config.pk).update(created_at=moment)
    config.refresh_from_db()
    return config


def arrive(config: PriceListConfig, *, at=None, status=PriceImport.Status.FAILED) -> PriceImport:
    """A list of ``config`` came (an import of it was made) ``at`` (default: now)."""
    message = factories.create_message(config.mailbox)
    fields = {"created_at": at} if at is not None else {}
    return PriceImport.objects.create(
        message=message,
        config=config,
        attachment_key=f"part{uuid.uuid4().hex[:8]}",
        status=status,
        **fields,
    )


def overdue_events() -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(kind=LIST_OVERDUE_EVENT).order_by("created_at"))


@pytest.fixture
def daily(mailbox) -> PriceListConfig:
    """A config expecting a list every 24 hours, made 25 hours ago: overdue now."""
    config = factories.create_config(mailbox, name="daily", expected_every_hours=24)
    return made_ago(config, 25 * 3600)


def test_a_config_without_a_schedule_is_never_overdue(mailbox):
    config = made_ago(factories.create_config(mailbox), 365 * DAY)

    assert overdue_configs() == []
    assert overdue_alerts_raise() == []
    assert config.schedule() is None


def test_a_config_whose_list_did_not_come_is_overdue_on_the_database_time(daily, mailbox):
    made_ago(
        factories.create_config(mailbox, name="off", enabled=False, expected_every_hours=1), DAY
    )
    quiet = factories.create_mailbox(name="quiet", enabled=False)
    made_ago(factories.create_config(quiet, name="unread", expected_every_hours=1), DAY)

    (found,) = overdue_configs()

    assert found.config == daily
    assert found.last_arrival is None
    assert found.period.start == daily.created_at
    assert found.period.due == daily.created_at + timedelta(hours=24)
    assert found.now > found.period.due


def test_a_list_that_came_in_the_period_is_not_overdue_whatever_its_outcome(daily):
    arrive(daily, status=PriceImport.Status.FAILED)

    assert overdue_configs() == []


def test_the_sweep_publishes_one_alert_per_period_however_often_it_runs(daily):
    (alert,) = overdue_alerts_raise()
    assert overdue_alerts_raise() == []
    overdue_sweep()

    assert list(OverdueAlert.objects.all()) == [alert]
    (event,) = overdue_events()
    assert (event.aggregate_type, event.aggregate_id) == ("pricefeed.overduealert", str(alert.pk))
    assert event.payload == {"alert_id": alert.pk}
    assert (alert.config, alert.period_start, alert.last_arrival) == (
        daily,
        daily.created_at,
        None,
    )


def test_the_sweep_is_registered_for_the_supervisor():
    assert sweeps.registered()["overdue lists"] is overdue_sweep


def test_a_late_list_does_not_alert_again_and_the_next_period_does(daily):
    (first,) = overdue_alerts_raise()
    late = arrive(daily)

    assert overdue_configs() == []
    assert overdue_alerts_raise() == []

    # 24 hours after the late list (and nothing since): the next period is overdue.
    next_due = late.created_at + timedelta(hours=24)
    assert overdue_alerts_raise(now=next_due - timedelta(seconds=1)) == []
    (second,) = overdue_alerts_raise(now=next_due)
    assert overdue_alerts_raise(now=next_due + timedelta(hours=1)) == []

    assert (second.period_start, second.due_at) == (late.created_at, next_due)
    assert second.last_arrival == late.created_at
    assert len(overdue_events()) == 2
    assert first.period_start != second.period_start


def test_weekday_alerts_once_per_day_and_a_late_list_is_that_days_only(mailbox):
    # Mondays and Thursdays by 10:00 Moscow time (07:00 UTC), a 30 minutes' grace.
    config = factories.create_config(
        mailbox,
        expected_weekdays=[MONDAY, THURSDAY],
        expected_by=time(10, 0),
        expected_timezone="Europe/Moscow",
        expected_grace_minutes=30,
    )
    made_at(config, utc(2026, 11, 26, 12, 0))  # after Thursday 26 November was due
    monday = utc(2026, 11, 30, 7, 0)

    assert overdue_alerts_raise(now=monday + timedelta(minutes=29)) == []
    (alert,) = overdue_alerts_raise(now=monday + timedelta(minutes=30))
    assert alert.due_at == monday
    assert overdue_alerts_raise(now=monday + timedelta(hours=2)) == []

    arrive(config, at=monday + timedelta(hours=5))  # Monday 15:00: late
    assert overdue_configs(now=monday + timedelta(hours=6)) == []
    assert overdue_alerts_raise(now=monday + timedelta(hours=6)) == []

    thursday = utc(2026, 12, 3, 7, 0)
    (second,) = overdue_alerts_raise(now=thursday + timedelta(hours=1))
    assert second.due_at == thursday
    assert len(overdue_events()) == 2


@pytest.mark.django_db(transaction=True)
def test_instances_checking_at_the_same_moment_publish_the_alert_once():
    mailbox = factories.create_mailbox()
    config = made_ago(factories.create_config(mailbox, expected_every_hours=6), DAY)
    instances = 4
    start = threading.Barrier(instances)
    raised: list[int] = []
    errors: list[BaseException] = []

    def instance() -> None:
        try:
            start.wait(timeout=30)
            raised.extend(alert.pk for alert in overdue_alerts_raise())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=instance) for _ in range(instances)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert len(raised) == 1
    assert list(OverdueAlert.objects.values_list("pk", flat=True)) == raised
    (event,) = overdue_events()
    assert event.aggregate_id == str(raised[0])
    assert OverdueAlert.objects.get().config_id == config.pk
