"""A message's files share one reading-time budget (PRICEFEED_MESSAGE_PARSE_SECONDS):
each import is charged the time its siblings took, so a message of a hundred files
cannot cost a hundred times one file's limit (issue 30)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from devkit.samples import price_list_csv
from pricefeed.imports.lifecycle import message_limits, price_import_run
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_queue")]

Status = PriceImport.Status


def two_files(mailbox):
    data = price_list_csv(ROWS)
    return receive(mailbox, [("a.csv", data), ("b.csv", data)])


def spent(price_import: PriceImport, seconds: float) -> None:
    started = price_import.created_at
    PriceImport.objects.filter(pk=price_import.pk).update(
        started_at=started, finished_at=started + timedelta(seconds=seconds)
    )


def test_a_file_is_read_within_what_its_message_has_left(mailbox, config, settings):
    settings.PRICEFEED_MESSAGE_PARSE_SECONDS = 100
    settings.PRICEFEED_PARSE_MAX_SECONDS = 180
    first, second = two_files(mailbox).imports.order_by("pk")
    spent(first, 30.5)
    spent(second, 0)

    assert message_limits(second).max_seconds == 69
    assert message_limits(first).max_seconds == 100  # its own time is not charged


def test_a_file_of_a_message_whose_time_is_spent_fails_unread(mailbox, config, settings):
    settings.PRICEFEED_MESSAGE_PARSE_SECONDS = 20
    first, second = two_files(mailbox).imports.order_by("pk")
    spent(first, 25)
    # The second file waits for a worker (receive() ran both already).
    PriceImport.objects.filter(pk=second.pk).update(
        status=Status.PENDING, started_at=None, finished_at=None, next_attempt_at=None
    )

    price_import_run(import_id=second.pk, worker="w")

    second.refresh_from_db()

    assert second.status == Status.FAILED
    assert second.last_error == (
        "the other files of this message took 25 s to read, the time one message may take "
        "(PRICEFEED_MESSAGE_PARSE_SECONDS): this file was not read"
    )
