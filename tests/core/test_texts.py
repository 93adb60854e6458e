"""core.texts and core.storedtext: a reason is stored in one form, a msgid and its values
(``Text.as_json()``), and said in the reader's language when shown."""

from __future__ import annotations

import importlib
import pickle
import smtplib

import pytest
from django.utils import translation

from core import claims
from core.storedtext import CUT, FOREIGN, Text, as_json, foreign, text_of
from core.texts import error_text, stored, translated, translated_all
from mailboxes import texts as mailbox_texts
from notifications import texts as notification_texts
from pricefeed import intake, matching
from pricefeed.parsing import messages as parsing_messages


def russian(value) -> str:
    with translation.override("ru"):
        return translated(value)


def english(value) -> str:
    with translation.override("en"):
        return translated(value)


# -- a Text, its stored form and its translation --------------------------------------


def test_a_stored_reason_is_said_in_russian_and_stays_english_in_english():
    reason = Text(claims.CLAIM_EXPIRED, worker="host-1:4242")

    assert reason == "claim by host-1:4242 expired (worker died or timed out)"
    assert reason.as_json() == {
        "text": "claim by %(worker)s expired (worker died or timed out)",
        "params": {"worker": "host-1:4242"},
    }
    assert russian(reason.as_json()) == (
        "захват обработчиком host-1:4242 просрочен (обработчик завершился или не уложился во время)"
    )
    assert english(reason.as_json()) == reason


def test_a_count_picks_the_russian_plural_form():
    assert "3 раза" in russian(as_json(claims.crash_reason(3)))
    assert "5 раз " in russian(as_json(claims.crash_reason(5)))
    assert russian(as_json(claims.crash_reason(1))).startswith(
        "процесс обработчика аварийно завершился"
    )


def test_texts_inside_a_text_are_translated_in_their_sentence():
    reason = Text(
        claims.LAST_DETAIL,
        reason=claims.crash_reason(2),
        detail=Text(claims.WORKER_DIED, worker="host-1:77"),
    )

    assert russian(as_json(reason)) == (
        "процесс обработчика аварийно завершался во время выполнения 2 раза (сбой чтения или "
        "нехватка памяти); последний раз: процесс обработчика host-1:77 завершился во время "
        "выполнения"
    )


def test_a_number_is_grouped_in_english_and_in_the_readers_format():
    refusal = Text(intake.REFUSED, reason=Text(mailbox_texts.HEADER_TOO_LARGE, limit=65536))

    assert refusal == (
        "refused: a header block is over 65,536 bytes (PRICEFEED_MIME_MAX_HEADER_BYTES)"
    )
    assert refusal.as_json()["params"]["reason"]["params"] == {"limit": 65536}
    assert russian(as_json(refusal)) == (
        "отклонено: блок заголовков больше 65\xa0536 байт (PRICEFEED_MIME_MAX_HEADER_BYTES)"
    )


def test_an_identifier_given_as_a_string_is_never_shown_as_a_number():
    text = Text(mailbox_texts.UIDVALIDITY_CHANGED, old="1700000000", new="1700000001")

    assert text == "UIDVALIDITY changed from 1700000000 to 1700000001"
    assert russian(as_json(text)) == "UIDVALIDITY изменился с 1700000000 на 1700000001"


def test_foreign_text_stays_as_it_is_inside_the_translated_sentence():
    text = Text(mailbox_texts.NOT_RECORDED, error="ValueError: bad header 'X-Ы'")

    assert russian(as_json(text)) == "не удалось записать сообщение: ValueError: bad header 'X-Ы'"


def test_a_foreign_text_is_shown_as_it_is_and_a_msgid_alone_is_translated():
    assert as_json("TimeoutError: timed out") == {
        "text": FOREIGN,
        "params": {"text": "TimeoutError: timed out"},
    }
    assert russian(as_json("TimeoutError: timed out")) == "TimeoutError: timed out"
    # A msgid stored as it is (gettext_noop gives a Text of no values) keeps its form.
    assert as_json(mailbox_texts.NO_MESSAGE_ID) == {"text": "no Message-ID header"}
    assert russian(as_json(mailbox_texts.NO_MESSAGE_ID)) == "нет заголовка Message-ID"
    assert russian("") == russian(None) == russian({}) == ""
    assert as_json("") == {}


def test_a_plain_string_is_never_read_for_a_template():
    """The stored form is the only one translated: English that happens to read like a
    msgid is shown as it is, so nothing matches text against templates."""
    assert russian("no Message-ID header") == "no Message-ID header"


def test_a_value_from_a_file_or_a_server_is_cut_and_made_storable():
    cell = "Ы" * 128 * 1024
    error = Text(parsing_messages.PRICE_NOT_A_NUMBER, value=cell)

    stored_value = error.as_json()["params"]["value"]
    assert len(stored_value) == CUT and stored_value.endswith("…")
    assert len(error) < CUT + 50
    assert Text(mailbox_texts.NOT_RECORDED, error="a\x00b\udc80c").params["error"] == "ab?c"


def test_a_value_that_is_an_exception_keeps_the_text_it_was_raised_with():
    exc = ValueError(Text(mailbox_texts.TOO_DEEP, limit=20))

    reason = Text(intake.REFUSED, reason=exc)

    assert text_of(exc) is exc.args[0]
    assert russian(as_json(reason)).startswith("отклонено: ")
    assert "20" in russian(as_json(reason))
    assert text_of(ValueError("plain")).as_json() == foreign("plain").as_json()


def test_a_text_survives_pickling_with_its_msgid_and_values():
    text = Text(mailbox_texts.LEASE_NOT_RENEWED, mailbox="7")

    again = pickle.loads(pickle.dumps(text))

    assert again == text and again.as_json() == text.as_json()


def test_from_json_gives_back_the_english():
    text = Text(
        mailbox_texts.LEASE_LOST_IN_STEP,
        mailbox="7",
        error=Text(mailbox_texts.NOT_RECORDED, error="OSError: disk full"),
    )

    assert Text.from_json(text.as_json()) == text
    assert Text.from_json({"text": "%(missing)s"}) == "%(missing)s"
    assert Text.from_json({"nonsense": 1}) == ""


def test_a_stored_form_whose_translation_lost_a_value_falls_back_to_the_english():
    stored_form = {"text": intake.REFUSED, "params": {"other": "x"}}

    assert russian(stored_form) == "refused: %(reason)s"


def test_stored_gives_the_english_and_the_stored_form_of_a_column():
    reason = Text(mailbox_texts.LEASE_NOT_RENEWED, mailbox="7")

    assert stored("last_error", reason) == {
        "last_error": "lease on mailbox 7 not renewed in time",
        "last_error_text": reason.as_json(),
    }
    assert stored("last_error", "") == {"last_error": "", "last_error_text": {}}
    assert stored("last_error", "x" * 9000, limit=10)["last_error"] == "x" * 10


def test_translated_all_translates_each():
    warnings = [as_json(mailbox_texts.NO_MESSAGE_ID), as_json("StartBoundaryNotFoundDefect")]

    with translation.override("ru"):
        assert translated_all(warnings) == [
            "нет заголовка Message-ID",
            "StartBoundaryNotFoundDefect",
        ]


# Every module whose msgids are stored (gettext_noop gives each a Text).
_STORING = [
    "core.claims",
    "mailboxes.texts",
    "mailboxes.imap",
    "mailboxes.addresses",
    "notifications.texts",
    "outbox.services",
    "pricefeed.catalogue",
    "pricefeed.intake",
    "pricefeed.limits",
    "pricefeed.matching",
    "pricefeed.imports.lifecycle",
    "pricefeed.imports.source",
    "pricefeed.parsing.messages",
]


def test_every_stored_msgid_has_a_russian_translation():
    msgids = {
        value.template
        for name in _STORING
        for value in vars(importlib.import_module(name)).values()
        if isinstance(value, Text) and not value.params
    }
    assert len(msgids) > 150
    with translation.override("ru"):
        # A template shown in the plural form for its count is a plural entry, which
        # gettext() finds only on Python 3.12 and newer: ngettext() finds it on all.
        untranslated = sorted(
            m for m in msgids if translation.gettext(m) == translation.ngettext(m, m, 2) == m
        )
    assert untranslated == []


def test_a_plural_msgid_is_translated_for_its_count():
    assert russian(as_json(Text(matching.MATCHED_FILES, count=1))) == "подходит 1 файл"
    assert russian(as_json(Text(matching.MATCHED_FILES, count=5))) == "подходят 5 файлов"


# -- what a failed attempt stores -------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "english_text", "shown"),
    [
        (
            smtplib.SMTPRecipientsRefused({"ops@buyer.test": (550, b"5.1.1 mailbox unavailable")}),
            "the SMTP server refused the recipient ops@buyer.test (550 5.1.1 mailbox unavailable)",
            "SMTP-сервер отклонил получателя ops@buyer.test (550 5.1.1 mailbox unavailable)",
        ),
        (
            smtplib.SMTPSenderRefused(553, b"sender not allowed", "pricefeed@buyer.test"),
            "the SMTP server refused the sender pricefeed@buyer.test (553 sender not allowed)",
            "SMTP-сервер отклонил отправителя pricefeed@buyer.test (553 sender not allowed)",
        ),
        (
            smtplib.SMTPDataError(554, b"5.7.1 spam\r\n detected"),
            "the SMTP server refused the message (554 5.7.1 spam detected)",
            "SMTP-сервер отклонил письмо (554 5.7.1 spam detected)",
        ),
        (
            smtplib.SMTPAuthenticationError(535, b"bad credentials"),
            "the SMTP server refused the login (535 bad credentials)",
            "SMTP-сервер не принял вход (535 bad credentials)",
        ),
        (
            smtplib.SMTPServerDisconnected("Connection unexpectedly closed"),
            "the SMTP server closed the connection (Connection unexpectedly closed)",
            "SMTP-сервер закрыл соединение (Connection unexpectedly closed)",
        ),
        (
            ConnectionRefusedError(111, "Connection refused"),
            "ConnectionRefusedError: [Errno 111] Connection refused",
            "ConnectionRefusedError: [Errno 111] Connection refused",
        ),
    ],
)
def test_an_smtp_error_is_stored_as_a_sentence_around_the_servers_reply(error, english_text, shown):
    assert notification_texts.smtp_error is not None  # registered by the app
    text = error_text(error)
    assert text == english_text
    assert russian(as_json(text)) == shown
