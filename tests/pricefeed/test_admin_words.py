"""What the admin's pages say in Russian rather than as stored: statuses by their
labels in objects' names, an attachment key and the file-reading summary in words, a
damaged archive in our own sentence, an outbox event's kind and row by their names, a
mailbox's server, a stored error shown once, and no placeholder's repr on an add page."""

from __future__ import annotations

import pytest
from django.utils import translation

from core.texts import translated
from devkit.samples import price_list_csv
from mailboxes.authresults import sender_verdict
from mailboxes.models import Mailbox
from notifications.models import Notification
from outbox.models import OutboxEvent
from pricefeed.admin import attachment_label, file_reading_table
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")
RUSSIAN = {"HTTP_ACCEPT_LANGUAGE": "ru"}


def page(client, url: str) -> str:
    response = client.get(url, **RUSSIAN)
    assert response.status_code == 200, url
    return response.content.decode()


def test_an_attachment_key_is_said_in_words():
    with translation.override("ru"):
        assert attachment_label("part2") == "вложение 2"
        assert attachment_label("part3/прайс/июнь.csv") == "вложение 3, прайс/июнь.csv в архиве"
        assert attachment_label("") == "—"


def test_the_file_reading_summary_is_a_russian_table():
    info = {
        "sheet": None,
        "encoding": "cp1251",
        "delimiter": ";",
        "header_row": 2,
        "columns": {"sku": "Артикул", "price": "Цена"},
        "errors_total": 1,
        "skipped_headings": 0,
        "warnings": [],
        "rows_digest": "ef2c",
    }
    with translation.override("ru"):
        table = file_reading_table(info)
    assert "<th>кодировка</th><td>cp1251</td>" in table
    assert "<th>строка заголовка</th><td>2</td>" in table
    assert "<th>строк с ошибками</th><td>1</td>" in table
    assert "Артикул" in table and "rows_digest" not in table and "ef2c" not in table
    assert "header_row" not in table and "{" not in table


@pytest.mark.django_db
def test_a_damaged_workbook_is_our_sentence_on_the_import_and_in_its_name(admin_client, config):
    message = receive(config.mailbox, [("книга.xlsx", b"PK\x03\x04 not a workbook")])
    [price_import] = run_all(message)
    assert price_import.status == PriceImport.Status.FAILED
    with translation.override("ru"):
        assert str(price_import).endswith("(Ошибка)")
    text = page(admin_client, f"/admin/pricefeed/priceimport/{price_import.pk}/change/")
    assert "это не zip-архив" in text
    assert "File is not a zip file" not in text and "(FAILED)" not in text


@pytest.mark.django_db
def test_an_import_page_shows_the_attachment_and_the_reading_in_words(admin_client, config):
    message = receive(config.mailbox, [("a.csv", price_list_csv(ROWS))])
    [price_import] = run_all(message)
    text = page(admin_client, f"/admin/pricefeed/priceimport/{price_import.pk}/change/")
    assert "вложение 2" in text and "part2" not in text
    assert "строка заголовка" in text and "header_row" not in text


@pytest.mark.django_db
def test_an_outbox_event_is_named_by_its_kind_and_row(admin_client, config):
    message = receive(config.mailbox, [("a.csv", price_list_csv(ROWS))])
    [price_import] = run_all(message)
    event = OutboxEvent.objects.get(kind="price_import.finished")
    with translation.override("ru"):
        assert str(event) == (
            f"импорт завершён: разослать уведомления: импорт прайс-листа № {price_import.pk} "
            "(Новое)"
        )
    listed = page(admin_client, "/admin/outbox/outboxevent/")
    assert ">price_import.finished<" not in listed  # (the filter's link keeps it)
    assert ">импорт завершён: разослать уведомления<" in listed
    assert f'href="/admin/pricefeed/priceimport/{price_import.pk}/change/"' in listed


@pytest.mark.django_db
def test_a_stored_error_is_shown_once_in_the_readers_language(admin_client, config):
    message = receive(config.mailbox, [("a.csv", price_list_csv(ROWS))])
    [price_import] = run_all(message)
    notification = Notification.objects.create(
        kind="import_outcome",
        price_import=price_import,
        recipient="buyer@example.ru",
        last_error="the SMTP server answered 451",
        last_error_text={"text": "%(text)s", "params": {"text": "451 try later"}},
    )
    text = page(admin_client, f"/admin/notifications/notification/{notification.pk}/change/")
    assert text.count("Последняя ошибка") == 1
    assert "451 try later" in text and "the SMTP server answered" not in text


@pytest.mark.django_db
def test_a_mailbox_server_is_said_in_words_and_its_add_page_shows_no_placeholder(
    admin_client, mailbox
):
    Mailbox.objects.filter(pk=mailbox.pk).update(security=Mailbox.Security.PLAIN)
    listed = page(admin_client, "/admin/mailboxes/mailbox/")
    assert f"{mailbox.username} на {mailbox.host}:{mailbox.port}, без шифрования" in listed
    for add in ("/admin/mailboxes/mailbox/add/", "/admin/api/apitoken/add/"):
        assert "DatabaseDefault" not in page(admin_client, add)


def test_the_senders_verdict_is_said_in_the_readers_language():
    untrusted = sender_verdict(b"", from_address="a@supplier.ru", authserv_ids=[])
    unsigned = sender_verdict(
        b"From: a@supplier.ru\r\n\r\n", from_address="a@supplier.ru", authserv_ids=["mx.buyer.ru"]
    )
    with translation.override("ru"):
        assert translated(untrusted.as_dict()["reason"]) == (
            "доверенные серверы-получатели не заданы (PRICEFEED_AUTHSERV_IDS пуст)"
        )
        said = translated(unsigned.as_dict()["reason"])
    assert said == "нет Authentication-Results от mx.buyer.ru"
    assert unsigned.reason == "no Authentication-Results from mx.buyer.ru"  # the English
