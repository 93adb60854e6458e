"""The admin's list of processes: each one's broker and state, and a mismatch among the
live ones said at the top."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.dbtime import db_now_minus
from fleet import services
from fleet.models import ProcessHeartbeat, ProcessKind
from tests.mailboxes.test_admin_leases import rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

URL = "admin:fleet_processheartbeat_changelist"
REDIS = "redis:127.0.0.1:6390/0"


@pytest.fixture(autouse=True)
def ttl(settings):
    settings.PRICEFEED_LEASE_TTL = 900
    settings.PRICEFEED_LIVENESS_WINDOW = 900


def add(process_id: str, kind: str, broker: str) -> None:
    ProcessHeartbeat.objects.create(
        process_id=process_id, kind=kind, host="h", pid=1, broker=broker
    )


def test_the_list_shows_each_process_with_its_broker_and_state(admin_client):
    add("listen_mail:a", ProcessKind.LISTEN_MAIL, "orm:default")
    add("qcluster:a", ProcessKind.QCLUSTER, "orm:default")
    add("qcluster:old", ProcessKind.QCLUSTER, REDIS)
    ProcessHeartbeat.objects.filter(process_id="qcluster:old").update(last_seen=db_now_minus(1000))
    add("outbox:a", ProcessKind.DISPATCH_OUTBOX, "orm:default")
    services.process_stopped(process_id="outbox:a")

    response = admin_client.get(reverse(URL))
    table = rows(response)

    assert table["listen_mail:a"][:3] == ["listen_mail", "orm:default", "live"]
    assert table["qcluster:a"][:3] == ["qcluster", "orm:default", "live"]
    assert table["qcluster:old"][:3] == ["qcluster", REDIS, "dead"]
    assert table["outbox:a"][:3] == ["dispatch_outbox", "orm:default", "stopped"]
    assert not list(response.context["messages"])  # the dead one's broker does not count


def test_live_processes_on_different_brokers_are_shown_as_a_problem(admin_client):
    add("listen_mail:a", ProcessKind.LISTEN_MAIL, "orm:default")
    add("qcluster:a", ProcessKind.QCLUSTER, REDIS)

    response = admin_client.get(reverse(URL))

    [message] = [str(m) for m in response.context["messages"]]
    assert "different django-q2 brokers" in message
    assert f"orm:default: listen_mail listen_mail:a; {REDIS}: qcluster qcluster:a" in message
    assert "PRICEFEED_REDIS_URL" in message


def test_a_web_process_on_another_broker_than_the_live_ones_is_told(admin_client, settings):
    add("qcluster:a", ProcessKind.QCLUSTER, REDIS)  # this web process: the database queue

    response = admin_client.get(reverse(URL))

    [message] = [str(m) for m in response.context["messages"]]
    assert "This web process uses the django-q2 broker orm:default, but the live " in message
    assert REDIS in message and "PRICEFEED_REDIS_URL" in message


def test_the_list_is_in_russian_for_a_browser_that_asks_for_it(admin_client):
    add("listen_mail:a", ProcessKind.LISTEN_MAIL, "orm:default")

    response = admin_client.get(reverse(URL), headers={"accept-language": "ru"})

    text = response.content.decode()
    assert "Сигналы процессов" in text  # verbose_name_plural, as the title says it
    assert "Последний сигнал" in text  # a column, capitalised as the admin does
    assert rows(response)["listen_mail:a"][:3] == ["listen_mail", "orm:default", "работает"]
