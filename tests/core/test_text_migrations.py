"""The data migrations of stored texts (mailboxes 0008, pricefeed 0012, outbox 0007,
notifications 0009): reasons written as English before are read once into their stored
form (a msgid and its values, core.legacy_texts) and shown in Russian after."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import translation

from core.storedtext import FOREIGN
from core.texts import translated
from devkit.samples import price_list_csv
from mailboxes.models import InboundMessage, Mailbox
from notifications import services
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

BEFORE = [
    ("mailboxes", "0006_verbose_names"),
    ("pricefeed", "0010_import_accepted_index"),
    ("outbox", "0005_no_aggregate_index"),
    ("notifications", "0007_delete_overdue_notification"),
]


def russian(value) -> str:
    with translation.override("ru"):
        return translated(value)


@pytest.mark.django_db(transaction=True)
def test_english_reasons_stored_before_become_stored_texts_shown_in_russian(mailbox, config):
    Subscription.objects.create(email="ops@buyer.test")
    (price_import,) = run_all(receive(mailbox, [("p.csv", price_list_csv(ROWS))]))
    services.notifications_fan_out(import_id=price_import.pk)
    message_id = price_import.message_id
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        old.get_model("mailboxes", "Mailbox").objects.filter(pk=mailbox.pk).update(
            last_error=f"lease on mailbox {mailbox.pk} not renewed in time",
            last_error_text={},
            test_result="OSError: no route to host",
            test_result_text={},
        )
        old.get_model("mailboxes", "InboundMessage").objects.filter(pk=message_id).update(
            last_error="refused: more than 500 MIME parts (PRICEFEED_MIME_MAX_PARTS)",
            warnings=["no Message-ID header", "InvalidBase64PaddingDefect"],
            match_report={
                "configs": [{"name": "c", "matched": False, "reasons": ["matched 3 file(s)"]}],
                "note": "the mailbox has no enabled configs",
            },
        )
        old.get_model("pricefeed", "PriceImport").objects.filter(pk=price_import.pk).update(
            last_error="no valid price rows (1,234 row(s) failed)",
            review_reason="",
            errors=[{"row": 7, "error": "price 'abc' is not a number"}],
            parse_info={"warnings": ["x" * 5000]},
        )
        old.get_model("outbox", "OutboxEvent").objects.filter(kind=services.SEND_EVENT).update(
            last_error="claim by host-1:4242 expired (worker died or timed out)"
        )
        old.get_model("notifications", "Notification").objects.update(
            last_error="given up by admin"
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    box = Mailbox.objects.get(pk=mailbox.pk)
    assert (
        russian(box.last_error_text) == f"аренда почтового ящика {mailbox.pk} не продлена вовремя"
    )
    assert box.test_result_text == {"text": FOREIGN, "params": {"text": box.test_result}}

    message = InboundMessage.objects.get(pk=message_id)
    assert russian(message.last_error_text) == (
        "отклонено: больше 500 частей MIME (PRICEFEED_MIME_MAX_PARTS)"
    )
    assert [russian(w) for w in message.warnings] == [
        "нет заголовка Message-ID",
        "InvalidBase64PaddingDefect",
    ]
    assert russian(message.match_report["configs"][0]["reasons"][0]) == "подходят 3 файла"
    assert message.match_report["note"] == {"text": "the mailbox has no enabled configs"}

    imported = PriceImport.objects.get(pk=price_import.pk)
    assert imported.last_error_text == {
        "text": "no valid price rows (%(failed)s row(s) failed)",
        "params": {"failed": 1234},
    }
    assert russian(imported.last_error_text) == (
        "нет ни одной корректной строки с ценой (1\xa0234 строки с ошибками)"
    )
    assert imported.review_reason_text == {}
    assert russian(imported.errors[0]["error"]) == "цена 'abc' — не число"
    # A long text is not read for a template: it is kept as a foreign text, cut.
    (warning,) = imported.parse_info["warnings"]
    assert warning["text"] == FOREIGN and len(warning["params"]["text"]) == 200

    event = OutboxEvent.objects.get(kind=services.SEND_EVENT)
    assert russian(event.last_error_text).startswith("захват обработчиком host-1:4242 просрочен")
    note = Notification.objects.get()
    assert russian(note.last_error_text) == "попытки прекращены пользователем admin"
