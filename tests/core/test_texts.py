"""core.texts: one engine for the texts stored in English and shown in the reader's
language: a registered template recognised in a plain stored string, and a Text kept as
JSON beside the English."""

from __future__ import annotations

import smtplib

import pytest
from django.utils import translation

from core import claims, texts
from core.texts import Text, as_json, error_text, translated, translated_all
from mailboxes import texts as mailbox_texts
from notifications import texts as notification_texts
from pricefeed import intake


def russian(value) -> str:
    with translation.override("ru"):
        return translated(value)


def english(value) -> str:
    with translation.override("en"):
        return translated(value)


# -- plain stored strings of registered templates -------------------------------------


def test_a_stored_reason_is_said_in_russian_and_stays_english_in_english():
    reason = claims.CLAIM_EXPIRED % {"worker": "host-1:4242"}

    assert reason == "claim by host-1:4242 expired (worker died or timed out)"
    assert russian(reason) == (
        "захват обработчиком host-1:4242 просрочен (обработчик завершился или не уложился во время)"
    )
    assert english(reason) == reason


def test_a_count_picks_the_russian_plural_form():
    assert "3 раза" in russian(claims.crash_reason(3))
    assert "5 раз " in russian(claims.crash_reason(5))
    assert russian(claims.crash_reason(1)).startswith("процесс обработчика аварийно завершился")


def test_texts_inside_a_text_are_translated_in_their_sentence():
    reason = claims.LAST_DETAIL % {
        "reason": claims.crash_reason(2),
        "detail": claims.WORKER_DIED % {"worker": "host-1:77"},
    }

    assert russian(reason) == (
        "процесс обработчика аварийно завершался во время выполнения 2 раза (сбой чтения или "
        "нехватка памяти); последний раз: процесс обработчика host-1:77 завершился во время "
        "выполнения"
    )


def test_a_message_refusal_of_two_apps_nests_and_numbers_take_the_locale_format():
    refusal = intake.REFUSED % {"reason": mailbox_texts.HEADER_TOO_LARGE % {"limit": f"{65536:,}"}}

    assert refusal == (
        "refused: a header block is over 65,536 bytes (PRICEFEED_MIME_MAX_HEADER_BYTES)"
    )
    assert russian(refusal) == (
        "отклонено: блок заголовков больше 65\xa0536 байт (PRICEFEED_MIME_MAX_HEADER_BYTES)"
    )


def test_a_verbatim_value_is_not_shown_as_a_number():
    text = mailbox_texts.UIDVALIDITY_CHANGED % {"old": 1700000000, "new": 1700000001}

    assert russian(text) == "UIDVALIDITY изменился с 1700000000 на 1700000001"


def test_foreign_text_stays_as_it_is_inside_the_translated_sentence():
    text = mailbox_texts.NOT_RECORDED % {"error": "ValueError: bad header 'X-Ы'"}

    assert russian(text) == "не удалось записать сообщение: ValueError: bad header 'X-Ы'"


def test_a_text_of_no_registered_template_is_shown_as_stored():
    assert russian("TimeoutError: timed out") == "TimeoutError: timed out"
    assert russian("") == ""
    assert russian(None) == ""


def test_of_two_templates_that_fit_the_reading_that_accounts_for_more_is_taken():
    # "the worker process %(worker)s died while running it" fits this text too (its
    # worker would be "died while running it 2 times …; last: the worker process X").
    reason = claims.LAST_DETAIL % {
        "reason": claims.crash_reason(2),
        "detail": claims.WORKER_DIED % {"worker": "X"},
    }

    assert russian(reason).endswith(
        "; последний раз: процесс обработчика X завершился во время выполнения"
    )


@pytest.fixture
def registry(monkeypatch):
    """The registry as the apps made it, given back after the test."""
    monkeypatch.setattr(texts, "_sources", [*texts._sources])
    monkeypatch.setattr(texts, "_plurals", {**texts._plurals})
    monkeypatch.setattr(texts, "_verbatim", {*texts._verbatim})
    yield
    monkeypatch.undo()
    texts._patterns.cache_clear()
    texts._parse.cache_clear()


def test_templates_registered_later_are_recognised_and_a_source_is_read_when_needed(
    registry,
):
    later = "a template registered by a test: %(value)s"
    given = []

    def source():
        given.append(True)
        return [later]

    texts.register(source)
    assert given == []
    assert english(later % {"value": "x"}) == "a template registered by a test: x"
    assert given == [True]
    assert later in texts.templates()


def test_a_template_of_no_fixed_words_reads_nothing(registry):
    texts.register(["%(anything)s"])

    assert russian("ValueError: x") == "ValueError: x"


def test_every_registered_template_has_a_russian_translation():
    with translation.override("ru"):
        untranslated = [
            template
            for template in texts.templates()
            if template not in texts._plurals and translation.gettext(template) == template
        ]
    assert untranslated == []


def test_translated_all_translates_each():
    warnings = [mailbox_texts.NO_MESSAGE_ID, "StartBoundaryNotFoundDefect"]

    with translation.override("ru"):
        assert translated_all(warnings) == [
            "нет заголовка Message-ID",
            "StartBoundaryNotFoundDefect",
        ]


# -- Text and its JSON ----------------------------------------------------------------


def test_a_text_and_its_json_say_themselves_in_the_active_language():
    text = Text(mailbox_texts.LEASE_NOT_RENEWED, mailbox=7)

    assert text == "lease on mailbox 7 not renewed in time"
    assert russian(text) == "аренда почтового ящика 7 не продлена вовремя"
    assert russian(as_json(text)) == "аренда почтового ящика 7 не продлена вовремя"
    assert english(as_json(text)) == text
    assert russian({}) == ""
    assert as_json("plain") == {}


def test_a_text_nested_in_a_text_is_translated_through_its_json():
    text = Text(
        mailbox_texts.LEASE_LOST_IN_STEP,
        mailbox=7,
        error=Text(mailbox_texts.NOT_RECORDED, error="OSError: disk full"),
    )

    assert russian(as_json(text)) == (
        "аренда почтового ящика 7 не продлена вовремя; шаг, который выполнялся, не удался: "
        "не удалось записать сообщение: OSError: disk full"
    )


# -- what a failed attempt stores -------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "stored", "shown"),
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
def test_an_smtp_error_is_stored_as_a_sentence_around_the_servers_reply(error, stored, shown):
    assert notification_texts.smtp_error is not None  # registered by the app
    assert error_text(error) == stored
    assert russian(stored) == shown
