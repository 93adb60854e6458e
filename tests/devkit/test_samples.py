"""The demo's sample mail shows the trouble an operator meets, not only the happy path."""

from __future__ import annotations

import itertools

import pytest

from devkit.samples import DEMO_CONFIGS, DEMO_KINDS, demo_stream
from mailboxes.models import InboundMessage
from pricefeed.intake import message_process
from pricefeed.models import PriceImport, PriceListConfig
from tests.factories import create_message, run_all

Status = PriceImport.Status
Message = InboundMessage.Status

pytestmark = pytest.mark.usefixtures("no_queue")


def test_every_round_of_the_demo_stream_has_a_failed_a_partial_and_an_unmatched_message(
    mailbox,
):
    for config in DEMO_CONFIGS:
        PriceListConfig.objects.create(mailbox=mailbox, **config)
    outcomes = []
    for description, raw in itertools.islice(demo_stream(), 2 * DEMO_KINDS):
        message = create_message(mailbox, raw, subject="", from_address="", message_id="")
        message_process(message_id=message.pk, worker="w")
        message.refresh_from_db()
        imports = run_all(message)
        outcomes.append((description, message.status, sorted(i.status for i in imports)))
    for round_ in (outcomes[:DEMO_KINDS], outcomes[DEMO_KINDS:]):
        by_kind = [(status, imports) for _, status, imports in round_]
        assert by_kind == [
            (Message.DONE, [Status.SUCCEEDED]),
            (Message.DONE, [Status.PARTIAL]),
            (Message.IGNORED, []),
            (Message.DONE, [Status.FAILED]),
            (Message.DONE, [Status.SUCCEEDED, Status.SUCCEEDED]),
            (Message.DONE, [Status.SUCCEEDED]),
        ], round_
    failures = PriceImport.objects.filter(status=Status.FAILED).order_by("pk")
    reasons = [failure.last_error for failure in failures]
    # Two kinds of failed file, one a round: the wrong file and a damaged workbook.
    assert "no header row" in reasons[0], reasons
    assert "damaged" in reasons[1], reasons
    partial = PriceImport.objects.filter(status=Status.PARTIAL).first()
    assert partial is not None
    assert partial.rows_failed == 2
    assert {error["row"] for error in partial.errors} == {3 + 3, 11 + 3}  # below 2 title rows
