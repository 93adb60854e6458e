"""pricefeed in Russian: its admin pages, and the texts it stores in English (row errors,
match reasons, import reasons) translated where they are shown (pricefeed.texts)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from core.texts import Text, as_json
from pricefeed import matching, texts
from pricefeed.imports import lifecycle
from pricefeed.models import PriceImport, PriceListConfig
from pricefeed.parsing import messages
from pricefeed.parsing.types import CELLS_CUT
from tests.factories import create_config, receive, run_all

Status = PriceImport.Status
RU = {"HTTP_ACCEPT_LANGUAGE": "ru"}

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")

# 20 data rows, file row 3 with a price that is not a number: PARTIAL.
ONE_BAD_ROW_CSV = (
    "Артикул;Наименование;Цена\r\n"
    "A-1;Болт;10,50\r\nA-2;Гайка;по запросу\r\n"
    + "".join(f"B-{i};Шайба;{i},00\r\n" for i in range(1, 19))
).encode("cp1251")


def get_in_russian(client, url: str) -> str:
    with translation.override("ru"):
        response = client.get(url, **RU)
    assert response.status_code == 200
    return response.content.decode()


def test_import_page_in_russian_shows_russian_labels_and_row_errors(admin_client, mailbox, config):
    (price_import,) = run_all(receive(mailbox, [("p.csv", ONE_BAD_ROW_CSV)]))
    assert price_import.status == Status.PARTIAL

    content = get_in_russian(
        admin_client, reverse("admin:pricefeed_priceimport_change", args=[price_import.pk])
    )

    assert "Ошибки в строках" in content
    assert "импорт прайс-листа" in content.lower()
    assert "цена &#x27;по запросу&#x27; — не число" in content
    # The row error is stored as a msgid and its values, translated where it is shown.
    assert price_import.errors == [
        {"row": 3, "error": as_json(Text(messages.PRICE_NOT_A_NUMBER, value="'по запросу'"))}
    ]


def test_import_list_in_russian_shows_the_reason_of_a_partial_import(admin_client, mailbox, config):
    run_all(receive(mailbox, [("p.csv", ONE_BAD_ROW_CSV)]))

    content = get_in_russian(admin_client, reverse("admin:pricefeed_priceimport_changelist"))

    assert "Импорты прайс-листов" in content
    assert "1 строка с ошибкой; строка 3: цена &#x27;по запросу&#x27; — не число" in content


def test_match_report_in_russian_says_why_a_config_matched_or_not(admin_client, mailbox, config):
    create_config(mailbox, name="Другой", sender_pattern="*@other.ru")
    message = receive(mailbox, [("p.csv", ONE_BAD_ROW_CSV)])

    content = get_in_russian(
        admin_client, reverse("admin:mailboxes_inboundmessage_change", args=[message.pk])
    )

    assert "подходит 1 файл" in content
    assert "отправитель &#x27;sales@acme.test&#x27; не подходит под шаблон" in content
    configs = message.match_report["configs"]
    assert [Text.from_json(c["reasons"][0]) for c in configs] == [
        "matched 1 file(s)",
        "sender 'sales@acme.test' does not match '*@other.ru'",
    ]


def test_preview_in_russian_shows_the_verdict_and_row_errors_in_russian(admin_client, config):
    url = reverse("admin:pricefeed_pricelistconfig_preview", args=[config.pk])
    with translation.override("ru"):
        response = admin_client.post(
            url, {"file": SimpleUploadedFile("p.csv", ONE_BAD_ROW_CSV)}, **RU
        )
    content = response.content.decode()

    assert "Импорт завершился бы со статусом PARTIAL." in content
    assert "цена &#x27;по запросу&#x27; — не число" in content


def test_config_form_in_russian_shows_russian_labels_and_choices(admin_client, config):
    content = get_in_russian(
        admin_client, reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk])
    )

    assert "Шаблон отправителя" in content
    assert "Десятичная запятая (1 234,50)" in content


# -- pricefeed.texts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "russian"),
    [
        (messages.PRICE_MISSING, "не указана цена"),
        (Text(messages.PRICE_NOT_A_NUMBER, value=repr("n/a")), "цена 'n/a' — не число"),
        (
            Text(messages.SKU_TOO_LONG, limit=255, length=1000),
            "артикул длиннее 255 символов (1\xa0000)",
        ),
        (
            Text(messages.ABOVE_THE_DATA, problem=Text(messages.LINE_NOT_UTF8, line=2)),
            "строка 2 — не корректный UTF-8 (выше данных)",
        ),
        (Text(matching.MATCHED_FILES, count=5), "подходят 5 файлов"),
        (
            Text(CELLS_CUT, rows=21, width=10, setting="s", first="4"),
            "в 21 строке есть ячейки правее столбца 10 (s); эти ячейки не прочитаны "
            "(первая — строка 4)",
        ),
        (
            Text(matching.NOT_AUTHENTICATED, why=matching.NOT_CHECKED),
            "отправитель не прошёл проверку: отправитель сообщения не проверялся",
        ),
        (
            Text(lifecycle.NO_VALID_ROWS_FAILED, failed=2),
            "нет ни одной корректной строки с ценой (2 строки с ошибками)",
        ),
        (
            Text(lifecycle.TOO_MANY_FAILED, failed=3, total=10, limit=10),
            "строк с ошибками: 3 из 10 — больше допустимых 10%",
        ),
    ],
)
def test_a_stored_text_is_shown_in_russian(text, russian):
    with translation.override("ru"):
        assert texts.translated(as_json(text)) == russian


def test_a_stored_text_is_shown_unchanged_in_english():
    reason = Text(matching.MATCHED_FILES, count=2)
    with translation.override("en"):
        assert texts.translated(as_json(reason)) == "matched 2 file(s)"


def test_choices_have_russian_labels():
    with translation.override("ru"):
        assert str(PriceListConfig.Mode.SNAPSHOT.label) == "Полный (файл — весь прайс-лист)"
        assert str(Status.PARTIAL.label) == "Частично (часть строк с ошибками)"
