"""The admin's front page: counts by state over 24 h and 7 days, each linked to the
change list of exactly its rows, the outbox and listeners as they stand, the charts, for
whoever may see each part, in a fixed number of queries."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from access.roles import VIEWER
from console import selectors
from console.dashboard import Dashboard
from core.dbtime import db_now_minus, db_now_plus
from mailboxes import leases
from mailboxes.models import InboundMessage, InstanceHeartbeat, MailboxLease
from notifications.models import Notification
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from tests import factories
from tests.access.support import staff

Msg = InboundMessage.Status
Imp = PriceImport.Status
Ev = OutboxEvent.Status
Note = Notification.Status

# Timeouts far longer than any test runs (see tests/monitoring/test_status.py).
TIMEOUTS = {
    "PRICEFEED_LEASE_TTL": 900,
    "PRICEFEED_LIVENESS_WINDOW": 900,
    "PRICEFEED_PROCESSING_CLAIM_TIMEOUT": 3600,
    "PRICEFEED_REQUEUE_AFTER": 1800,
    "PRICEFEED_OUTBOX_CLAIM_TIMEOUT": 2400,
}

# How long ago rows were made: within the last 24 h, within 7 days but not 24 h, and
# older than 7 days (counted nowhere). The 24 h window starts between 23 and 24 hours
# ago (at the start of an hour), the 7 days' between 167 and 168 hours ago.
RECENT, DAYS_AGO, LONG_AGO = 1, 30, 8 * 24


@pytest.fixture(autouse=True)
def timeouts(settings):
    for name, value in TIMEOUTS.items():
        setattr(settings, name, value)


def hours_ago(hours: int) -> datetime:
    """Ten minutes into the hour that began ``hours`` hours before the current one: the
    same hour bucket for every row made with it, whenever the test runs."""
    current = timezone.now().replace(minute=0, second=0, microsecond=0)
    return current - timedelta(hours=hours) + timedelta(minutes=10)


class Installation:
    """Mailboxes, listeners, and rows of every kind in every state worth counting."""

    def __init__(self) -> None:
        self.prices = factories.create_mailbox(name="prices")
        self.orphan = factories.create_mailbox(name="orphan")
        factories.create_mailbox(name="off", enabled=False)
        factories.create_mailbox(name="no config yet")  # not to be listened to: not unheld
        self.config = factories.create_config(self.prices)
        factories.create_config(self.orphan, name="orphan's")
        self.keys = 0

        leases.heartbeat(instance_id="host-a:1")
        leases.heartbeat(instance_id="host-b:2")
        InstanceHeartbeat.objects.filter(instance_id="host-b:2").update(
            last_seen=db_now_minus(1800)
        )
        leases.lease_acquire(mailbox_id=self.prices.pk, owner="host-a:1", ttl=600)
        leases.lease_acquire(mailbox_id=self.orphan.pk, owner="host-b:2", ttl=600)
        MailboxLease.objects.filter(mailbox=self.orphan).update(expires_at=db_now_minus(1000))

        for status, count in [
            (Msg.RECEIVED, 1),
            (Msg.DONE, 2),
            (Msg.IGNORED, 1),
            (Msg.RETRYABLE, 1),
            (Msg.FAILED, 1),
            (Msg.REJECTED, 1),
        ]:
            for _ in range(count):
                self.message(status, RECENT)
        self.message(Msg.FAILED, DAYS_AGO)
        self.message(Msg.DONE, DAYS_AGO)
        self.message(Msg.FAILED, LONG_AGO)

        # Imports finished 10, 20, 30 and 40 s after their message arrived.
        self.carrier = self.message(Msg.DONE, LONG_AGO)
        for status, took in [
            (Imp.SUCCEEDED, 10),
            (Imp.SUCCEEDED, 20),
            (Imp.PARTIAL, 30),
            (Imp.FAILED, 40),
        ]:
            self.price_import(status, RECENT, took=took)
        self.price_import(Imp.PENDING, RECENT)
        self.price_import(Imp.FAILED, DAYS_AGO, took=5)
        held = self.price_import(Imp.SUCCEEDED, DAYS_AGO, took=5)
        # Read, and waiting for an operator (it removes too much of the catalogue).
        PriceImport.objects.filter(pk=held.pk).update(review=PriceImport.Review.HELD)
        self.price_import(Imp.SUCCEEDED, LONG_AGO, took=5)

        notified = self.price_import(Imp.FAILED, LONG_AGO, took=5)
        for n, (status, hours) in enumerate(
            [
                (Note.PENDING, RECENT),
                (Note.FAILED, RECENT),
                (Note.FAILED, RECENT),
                (Note.SENT, RECENT),
                (Note.FAILED, DAYS_AGO),
                (Note.FAILED, LONG_AGO),
            ]
        ):
            row = Notification.objects.create(
                kind="import_outcome",
                price_import=notified,
                recipient=f"r{n}@example.com",
                outcome="FAILED",
                status=status,
            )
            Notification.objects.filter(pk=row.pk).update(created_at=hours_ago(hours))

        # The backlog: due 2500 s ago (stuck: claim timeout 2400), due now, backing off.
        self.event(Ev.NEW, next_attempt_at=db_now_minus(2500))
        self.event(Ev.NEW)
        self.event(Ev.NEW, next_attempt_at=db_now_plus(900))
        self.event(Ev.SENT)
        self.event(Ev.FAILED)

    def message(self, status: str, hours: int, **fields: object) -> InboundMessage:
        row = factories.create_message(self.prices, status=status, **fields)
        InboundMessage.objects.filter(pk=row.pk).update(received_at=hours_ago(hours))
        row.refresh_from_db()
        return row

    def price_import(self, status: str, hours: int, *, took: int | None = None) -> PriceImport:
        """An import made ``hours`` ago from a message that arrived then; finished
        ``took`` seconds after that arrival."""
        message = self.message(Msg.DONE, hours) if took is not None else self.carrier
        self.keys += 1
        created = hours_ago(hours)
        row = PriceImport.objects.create(
            message=message, config=self.config, attachment_key=f"part{self.keys}", status=status
        )
        PriceImport.objects.filter(pk=row.pk).update(
            created_at=created,
            finished_at=None if took is None else message.received_at + timedelta(seconds=took),
        )
        return row

    def event(self, status: str, **changes: object) -> OutboxEvent:
        row = OutboxEvent.objects.create(
            kind="outbox.noop", aggregate_type="test", aggregate_id="1", status=status
        )
        if changes:
            OutboxEvent.objects.filter(pk=row.pk).update(**changes)
        return row


# Every count the installation above makes: (tile, row) → (24 h, 7 days), or the one
# value of a tile that shows how things stand now. The messages that carry imports
# (one per finished import, 24 h: 4, 7 days: 6 more with the two 30 h ago) are DONE.
EXPECTED = {
    ("messages", "received"): (7 + 4, 7 + 4 + 2 + 2),
    ("messages", "ignored"): (1, 1),
    ("messages", "retrying"): (1, 1),
    ("messages", "failed"): (1, 2),
    ("messages", "rejected"): (1, 1),
    ("imports", "succeeded"): (2, 3),
    ("imports", "partial"): (1, 1),
    ("imports", "failed"): (1, 2),
    ("imports", "in_progress"): (1, 1),
    ("imports", "held"): (0, 1),
    ("notifications", "pending"): (1, 1),
    ("notifications", "failed"): (2, 3),
    ("outbox", "due"): (2,),
    ("outbox", "backing_off"): (1,),
    ("outbox", "stuck"): (1,),
    ("outbox", "failed"): (1,),
    ("listeners", "live"): (1,),
    ("listeners", "dead"): (1,),
    ("listeners", "stopped"): (0,),
    ("listeners", "leases_held"): (1,),
    ("listeners", "unheld"): (1,),
}


def front_page(client, user: User) -> tuple[Dashboard, str]:
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 200
    return response.context["dashboard"], response.content.decode()


def superuser() -> User:
    return User.objects.create_superuser("root", "root@example.com", "x")


def with_permissions(*names: str) -> User:
    user = User.objects.create_user("partial", is_staff=True)
    for name in names:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return User.objects.get(pk=user.pk)  # no cached permissions


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["superuser", "viewer"])
def test_counts_of_every_state_in_both_windows_and_each_link_lists_exactly_them(client, who):
    installation = Installation()
    user = superuser() if who == "superuser" else staff(VIEWER)

    dashboard, html = front_page(client, user)

    assert [t.key for t in dashboard.tiles] == [
        "messages",
        "imports",
        "notifications",
        "outbox",
        "overdue",
        "prices",
        "listeners",
    ]
    found = {
        (tile.key, row.key): tuple(cell.value for cell in row.cells)
        for tile in dashboard.tiles
        for row in tile.rows
        if (tile.key, row.key) in EXPECTED
    }
    assert found == EXPECTED
    for tile in dashboard.tiles:
        for row in tile.rows:
            for cell in row.cells:
                if not cell.url:
                    continue
                assert cell.url in html.replace("&amp;", "&")
                listed = client.get(cell.url)
                # An unknown lookup would redirect to ?e=1; a refused one be a 400.
                assert listed.status_code == 200, (tile.key, row.key, cell.url)
                expected = EXPECTED.get((tile.key, row.key))
                if expected is not None:
                    assert listed.context["cl"].result_count == cell.value, (tile.key, row.key)
                # The list says what it is filtered by: every parameter is one of its
                # filters', shown selected in the sidebar.
                asked = set(parse_qs(urlsplit(cell.url).query))
                shown = {
                    name
                    for spec in listed.context["cl"].filter_specs
                    for name in spec.expected_parameters()
                    if spec.has_output()
                }
                assert asked <= shown, (tile.key, row.key, asked - shown)
    assert dashboard.tile("listeners").notes == [
        ("orphan", f"/admin/mailboxes/mailbox/{installation.orphan.pk}/change/")
    ]
    # Trouble that is there is marked.
    assert 'pf-n pf-alarm"><a href="/admin/mailboxes/inboundmessage/?' in html


@pytest.mark.django_db
def test_the_outbox_tile_shows_how_long_the_oldest_due_event_has_waited(client):
    Installation()

    dashboard, _html = front_page(client, superuser())

    oldest = dashboard.tile("outbox").cell("oldest_due")
    # Due 2500 s ago: 41.7 min; stuck, so marked.
    assert re.fullmatch(r"4[12] min", str(oldest.value)), oldest.value
    assert oldest.alarm


@pytest.mark.django_db
@pytest.mark.usefixtures("no_queue")
def test_the_prices_tile_counts_held_prices_and_offers_without_a_rate(client):
    from tests.pricing.test_offers import held_world

    held_world()

    dashboard, html = front_page(client, with_permissions("pricing.view_productprice"))

    tile = dashboard.tile("prices")
    assert tile.cell("held").value == 2
    assert tile.cell("held").url == "/admin/pricing/productprice/?status__exact=held"
    assert tile.cell("no_rate").value == 2  # the dollar supplier's two offers
    assert "Offers without a rate (1 currency)" in html
    assert dashboard.tile("outbox") is None


@pytest.mark.django_db
def test_charts_show_the_last_24_hours_per_hour(client):
    Installation()

    dashboard, html = front_page(client, superuser())

    by_id = {chart.id: chart for chart in dashboard.charts}
    assert list(by_id) == ["chart-messages", "chart-imports", "chart-latency"]
    messages = by_id["chart-messages"]
    assert len(messages.columns) == 24
    # The bar of the hour the recent rows were made in: 7 + 4 received, of which 1
    # ignored and 3 failed, rejected or retrying.
    slot = selectors.windows().day_hours.index(hours_ago(RECENT).replace(minute=0).astimezone(UTC))
    assert messages.table[slot][1:] == ["7", "1", "3"]
    assert sum(1 for column in messages.columns if column.rects) == 1
    imports = by_id["chart-imports"]
    assert imports.table[slot][1:] == ["2", "1", "1", "1"]
    latency = by_id["chart-latency"]
    # 10, 20, 30 and 40 s: median 25 s, 95th percentile 38.5 s.
    assert latency.table[slot][1:] == ["25 s", "38 s"]
    assert [len(line.dots) for line in latency.lines] == [1, 1]
    for chart in dashboard.charts:
        assert f'aria-labelledby="{chart.id}-title {chart.id}-desc"' in html
        assert f'<title id="{chart.id}-title">' in html


@pytest.mark.django_db
def test_the_latency_per_hour_is_percentile_cont_of_arrival_to_finish():
    Installation()
    since = selectors.windows().week_since

    by_hour = selectors.arrival_to_finished_by_hour(since)

    recent = by_hour[hours_ago(RECENT).replace(minute=0).astimezone(UTC)]
    # 10, 20, 30 and 40 s, interpolated between the nearest as percentile_cont does.
    assert (recent.p50, recent.p95, recent.imports) == (25.0, 38.5, 4)


@pytest.mark.django_db
def test_a_user_sees_only_the_tiles_of_the_models_they_may_view(client):
    Installation()
    user = with_permissions("mailboxes.view_inboundmessage", "outbox.view_outboxevent")

    dashboard, html = front_page(client, user)

    assert [t.key for t in dashboard.tiles] == ["messages", "outbox"]
    assert [c.id for c in dashboard.charts] == ["chart-messages"]
    assert 'id="tile-imports"' not in html and 'id="chart-latency"' not in html
    assert 'id="tile-messages"' in html


@pytest.mark.django_db
def test_the_listeners_tile_shows_only_what_the_user_may_view(client):
    Installation()
    user = with_permissions("mailboxes.view_mailbox")

    dashboard, _html = front_page(client, user)

    assert [t.key for t in dashboard.tiles] == ["listeners"]
    assert [row.key for row in dashboard.tiles[0].rows] == ["unheld"]


@pytest.mark.django_db
def test_a_staff_user_without_view_permissions_gets_the_page_without_tiles(client):
    Installation()

    dashboard, html = front_page(client, with_permissions())

    assert (dashboard.tiles, dashboard.charts) == ([], [])
    assert "pf-tile" not in html


@pytest.mark.django_db
def test_an_app_index_keeps_the_plain_list(client):
    client.force_login(superuser())

    response = client.get("/admin/mailboxes/")

    assert response.status_code == 200
    assert "pf-console" not in response.content.decode()


def more_rows(installation: Installation, n: int) -> None:
    for hours in range(n):
        message = installation.message(Msg.FAILED, hours % 150 + 1)
        installation.keys += 1
        PriceImport.objects.create(
            message=message,
            config=installation.config,
            attachment_key=f"part{installation.keys}",
            status=Imp.SUCCEEDED,
            finished_at=timezone.now(),
        )


# The dashboard's own queries for a user who sees every tile: messages, imports and
# notifications counted (3), the latency percentiles (1), the outbox summary (2),
# instances, leases and unheld mailboxes (3), the unheld ones' ids (1) and the configs
# that expect a list, with their last arrival (1), held prices and offers without a
# rate (1), failing deliveries (1).
DASHBOARD_QUERIES = 13


@pytest.mark.django_db
def test_a_page_view_costs_the_same_few_queries_however_many_rows(
    client, django_assert_max_num_queries
):
    installation = Installation()
    client.force_login(with_permissions())
    with CaptureQueriesContext(connection) as plain:  # session, user, permissions, log
        assert client.get("/admin/").status_code == 200
    client.force_login(staff(VIEWER))

    with django_assert_max_num_queries(len(plain) + DASHBOARD_QUERIES):
        assert client.get("/admin/").status_code == 200
    more_rows(installation, 200)
    with django_assert_max_num_queries(len(plain) + DASHBOARD_QUERIES):
        assert client.get("/admin/").status_code == 200


def test_svg_coordinates_stay_numbers_in_russian():
    from console import charts

    slots = [
        charts.Slot(label=f"{h:02}:00", title=f"{h:02}:00", values={"ok": h * 1.5, "failed": 1})
        for h in range(24)
    ]
    with translation.override("ru"):
        bars = charts.stacked_bars(
            chart_id="c1",
            title="t",
            description="d",
            series=[charts.Series("ok", "ok"), charts.Series("failed", "failed")],
            slots=slots,
        )
        line = charts.lines(
            chart_id="c2",
            title="t",
            description="d",
            series=[charts.Series("ok", "ok")],
            slots=slots,
            formatter=charts.format_duration,
        )
        for chart in (bars, line):
            html = render_to_string("console/chart.html", {"chart": chart})
            svg = ElementTree.fromstring(html[html.index("<svg") : html.index("</svg>") + 6])
            for element in svg.iter():
                for name in ("x", "y", "width", "height", "cx", "cy", "x1", "x2", "y1", "y2"):
                    value = element.get(name)
                    if value is not None and not value.endswith("%"):
                        float(value)  # 12.5, never 12,5
                if element.get("points"):
                    for point in element.get("points").split():
                        [float(v) for v in point.split(",")]
        # Russian numbers in the labels (the words come with the catalogue).
        assert charts.format_duration(2.5).startswith("2,5")


@pytest.mark.django_db
def test_hours_are_cut_in_the_time_zone_even_half_an_hour_off_utc(client, settings):
    settings.TIME_ZONE = "Asia/Kolkata"  # UTC+5:30: its hours begin at :30 UTC
    Installation()

    dashboard, html = front_page(client, superuser())

    assert dashboard.zone == "Asia/Kolkata"
    assert dashboard.tile("messages").cell("received").value == 11
    assert dashboard.tile("messages").cell("received", 1).value == 15
    for start in selectors.windows().hours:
        assert (start.minute, start.second) == (30, 0)
    chart = next(c for c in dashboard.charts if c.id == "chart-messages")
    (slot,) = [row for row in chart.table if row[1:] != ["0", "0", "0"]]
    assert slot[1:] == ["7", "1", "3"]
    latency = next(c for c in dashboard.charts if c.id == "chart-latency")
    assert [row[1:] for row in latency.table if row[1] != "—"] == [["25 s", "38 s"]]
    assert "Hours in Asia/Kolkata." in html


@pytest.mark.django_db
def test_the_front_page_speaks_russian_when_asked(client):
    Installation()
    client.force_login(superuser())

    with translation.override("ru"):
        html = client.get("/admin/", headers={"accept-language": "ru"}).content.decode()

    assert "Входящие сообщения" in html
    assert "Исходящие" in html
    assert "Пауза перед повтором" in html
    assert "Время указано в поясе" in html
    assert "Outbox" not in html[html.index('id="tile-outbox"') :]
