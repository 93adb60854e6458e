"""The config form's "Expected arrival": one complete rule or none, a known time zone;
every mistake a message on its field, never a traceback."""

from __future__ import annotations

from datetime import time

import pytest
from django.utils import translation

from mailboxes.models import Mailbox
from pricefeed.forms import PriceListConfigForm

pytestmark = pytest.mark.django_db


def form(mailbox: Mailbox, **overrides: object) -> PriceListConfigForm:
    """The form of a new config as the admin offers it (every field at its default),
    named and given a mailbox, with ``overrides``."""
    fields = PriceListConfigForm().fields
    initial = {
        name: f.initial() if callable(f.initial) else f.initial for name, f in fields.items()
    }
    data: dict[str, object] = {
        name: value for name, value in initial.items() if value not in (None, False, [], {})
    }
    data.update(name="Опт", mailbox=mailbox.pk, columns="{}", **overrides)
    return PriceListConfigForm(data=data)


def test_a_config_without_a_schedule_is_accepted(mailbox):
    f = form(mailbox)

    assert f.is_valid(), f.errors
    config = f.save()
    assert (config.expected_every_hours, config.expected_weekdays, config.expected_by) == (
        None,
        [],
        None,
    )
    assert config.expected_grace_minutes == 0
    assert config.schedule() is None


def test_every_n_hours_is_saved(mailbox):
    f = form(mailbox, expected_every_hours="24", expected_grace_minutes="90")

    assert f.is_valid(), f.errors
    config = f.save()
    assert (config.expected_every_hours, config.expected_grace_minutes) == (24, 90)
    assert config.expected_display() == "every 24 hours"


def test_weekdays_by_a_time_in_a_zone_are_saved(mailbox):
    f = form(
        mailbox,
        expected_weekdays=["1", "4"],
        expected_by="10:00",
        expected_timezone=" Europe/Berlin ",
    )

    assert f.is_valid(), f.errors
    config = f.save()
    config.refresh_from_db()
    assert config.expected_weekdays == [1, 4]
    assert config.expected_by == time(10, 0)
    assert config.expected_timezone == "Europe/Berlin"
    assert config.expected_display() == "Mon, Thu by 10:00"
    with translation.override("ru"):
        assert config.expected_display() == "Пн, Чт к 10:00"


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"expected_every_hours": "6", "expected_weekdays": ["1"], "expected_by": "10:00"},
            "expected_every_hours",
            "Choose one rule: every N hours, or weekdays by a time of day; clear the other.",
        ),
        (
            {"expected_weekdays": ["1", "5"]},
            "expected_by",
            "Give the time of day the list is due by on those weekdays.",
        ),
        (
            {"expected_by": "10:00"},
            "expected_weekdays",
            "Choose the weekdays the list is due on by that time.",
        ),
        (
            {"expected_every_hours": "2", "expected_grace_minutes": "120"},
            "expected_grace_minutes",
            "The grace must be shorter than the 2 hours between lists.",
        ),
        (
            {"expected_every_hours": "0"},
            "expected_every_hours",
            "Ensure this value is greater than or equal to 1.",
        ),
        (
            {"expected_every_hours": "48", "expected_grace_minutes": "1441"},
            "expected_grace_minutes",
            "Ensure this value is less than or equal to 1440.",
        ),
        (
            {"expected_every_hours": "24", "expected_timezone": "Europe/Atlantis"},
            "expected_timezone",
            "Unknown time zone “Europe/Atlantis”: give an IANA name such as Europe/Moscow.",
        ),
        (
            {"expected_weekdays": ["8"], "expected_by": "10:00"},
            "expected_weekdays",
            "Select a valid choice. 8 is not one of the available choices.",
        ),
    ],
)
def test_an_incomplete_or_contradictory_schedule_is_a_message_on_its_field(
    mailbox, fields, field, message
):
    f = form(mailbox, **fields)

    assert not f.is_valid()
    assert f.errors[field] == [message]


def test_the_messages_are_in_russian_for_a_russian_operator(mailbox):
    with translation.override("ru"):
        f = form(mailbox, expected_by="10:00", expected_timezone="Марс/Олимп")

        assert not f.is_valid()
        assert f.errors["expected_weekdays"] == [
            "Выберите дни недели, в которые прайс-лист должен прийти к этому времени."
        ]
        assert f.errors["expected_timezone"] == [
            "Неизвестный часовой пояс «Марс/Олимп»: укажите имя IANA, например Europe/Moscow."
        ]
