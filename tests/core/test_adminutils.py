"""How every admin list shows a time, a long text and a duration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone, translation

from core.adminutils import absolute, age, due, duration, truncated, when

NOW = datetime(2026, 12, 1, 19, 5, 3, tzinfo=UTC)


@pytest.mark.parametrize(
    ("delta", "said"),
    [
        (timedelta(seconds=-20), "just now"),
        (timedelta(seconds=20), "in under a minute"),
        (timedelta(minutes=-3, seconds=-10), "3 minutes ago"),
        (timedelta(hours=-26), "1 day ago"),
        (timedelta(minutes=5, seconds=30), "in 5 minutes"),
    ],
)
def test_an_age_is_said_in_its_largest_unit(delta, said):
    assert age(NOW + delta, now=NOW).replace("\xa0", " ") == said


def test_an_age_is_said_in_the_active_language():
    with translation.override("ru"):
        said = age(NOW - timedelta(minutes=3), now=NOW)

    assert "3\xa0минуты" in said


def test_the_absolute_time_is_24_hour_in_the_configured_zone_and_names_it(settings):
    settings.TIME_ZONE = "Europe/Moscow"

    assert absolute(NOW) == "2026-12-01 22:05:03 MSK (Europe/Moscow)"


def test_the_absolute_time_in_utc_names_utc(settings):
    settings.TIME_ZONE = "UTC"

    assert absolute(NOW) == "2026-12-01 19:05:03 UTC"


def test_a_time_in_a_list_is_its_age_with_the_absolute_time_on_hover(settings):
    settings.TIME_ZONE = "Europe/Moscow"

    shown = when(NOW - timedelta(minutes=3), now=NOW)

    assert shown == (
        '<time class="pf-when" datetime="2026-12-01T19:02:03+00:00" '
        'title="2026-12-01 22:02:03 MSK (Europe/Moscow)">3\xa0minutes ago</time>'
    )
    assert when(None) == "—"


def test_a_long_text_is_cut_to_its_column_on_one_line_and_whole_on_hover():
    text = "line one <b>\n" + "x" * 200

    shown = truncated(text, width="s", error=True)

    assert shown.startswith('<span class="pf-cell pf-s pf-error" title="line one &lt;b&gt;\n')
    assert ">line one &lt;b&gt; " + "x" * 20 in shown
    assert shown.endswith("…</span>")
    assert truncated("", width="l") == "—"


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0.423, "0.42 s"), (12.7, "12 s"), (125, "2 min 05 s"), (7620, "2 h 07 min")],
)
def test_a_duration_is_said_in_the_units_that_fit(seconds, said):
    assert duration(timedelta(seconds=seconds)) == said
    assert duration(None) == "—"


@pytest.mark.parametrize(
    ("delta", "said", "red"),
    [
        (timedelta(minutes=5, seconds=10), "in 5 minutes", False),
        (timedelta(seconds=-30), "due now", False),
        (timedelta(minutes=-5, seconds=-10), "overdue by 5 minutes", True),
    ],
)
def test_a_next_attempt_is_in_a_while_due_now_or_overdue(delta, said, red):
    shown = due(NOW + delta, now=NOW).replace("\xa0", " ")

    assert f">{said}</time>" in shown
    assert ("pf-error" in shown) is red
    assert 'title="2026-12-01 ' in shown


@pytest.mark.django_db
def test_the_since_filter_takes_a_named_span_or_an_exact_time_and_shows_which(client):
    from django.contrib.auth.models import User

    from mailboxes.models import InboundMessage
    from tests.factories import create_mailbox, create_message

    mailbox = create_mailbox()
    ages = {"new": timedelta(minutes=10), "day": timedelta(hours=5), "old": timedelta(days=3)}
    now = timezone.now()
    for name, ago in ages.items():
        message = create_message(mailbox, subject=name)
        InboundMessage.objects.filter(pk=message.pk).update(received_at=now - ago)
    client.force_login(User.objects.create_superuser("root", "root@example.com", "x"))
    url = "/admin/mailboxes/inboundmessage/"

    def listed(**params):
        response = client.get(url, params)
        assert response.status_code == 200
        return sorted(m.subject for m in response.context["cl"].result_list), response

    assert listed(since="1h")[0] == ["new"]
    assert listed(since="24h")[0] == ["day", "new"]
    assert listed(since="7d")[0] == ["day", "new", "old"]
    exact = (now - timedelta(hours=6)).astimezone(UTC).replace(microsecond=0)
    subjects, response = listed(since=exact.isoformat())
    assert subjects == ["day", "new"]
    # The exact time is a choice of its own, selected, in the current time zone.
    shown = timezone.localtime(exact).strftime("%Y-%m-%d %H:%M")
    assert f"since {shown}" in response.content.decode()
    # Not a time: a 400 (core.adminutils.ListAdminMixin), not Django's "?e=1" page.
    assert client.get(url, {"since": "yesterday"}).status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "params"),
    [
        # Django's date filters take any time in their parameters: one past the calendar
        # in UTC (year 1 at +03:00) would reach the database as an OverflowError.
        ("/admin/api/apitoken/", {"revoked_at__gte": "0001-01-01"}),
        ("/admin/pricefeed/priceimport/", {"created_at__lt": "9999-12-31T23:59:59-14:00"}),
        ("/admin/auth/user/", {"date_joined__gte": "0001-01-01T00:00:00+14:00"}),
        # Not a time at all: the field refuses it.
        ("/admin/outbox/outboxevent/", {"created_at__gte": "bogus"}),
    ],
)
def test_a_time_a_list_cannot_give_the_database_is_a_400(client, settings, url, params):
    from django.contrib.auth.models import User

    settings.TIME_ZONE = "Europe/Moscow"
    client.force_login(User.objects.create_superuser("root", "root@example.com", "x"))
    assert client.get(url).status_code == 200
    assert client.get(url, params).status_code == 400
    # A time of this century is a filter like any other.
    key = next(iter(params))
    assert client.get(url, {key: "2026-12-01T00:00:00+03:00"}).status_code == 200
