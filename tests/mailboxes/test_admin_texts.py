"""A message's and a mailbox's stored reasons (a msgid and its values) are shown in the
reader's language on their admin lists and pages; the rows keep the English too."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse
from django.utils import translation

from core.claims import MARKED_FAILED_BY
from core.texts import Text, as_json, stored, stored_all
from mailboxes import texts
from mailboxes.models import InboundMessage, Mailbox
from pricefeed import intake

pytestmark = pytest.mark.usefixtures("fast_password_hashing")

Status = InboundMessage.Status
MESSAGES = reverse("admin:mailboxes_inboundmessage_changelist")
MAILBOXES = reverse("admin:mailboxes_mailbox_changelist")


def page(client, url: str, language: str) -> str:
    with translation.override(language):
        response = client.get(url, headers={"accept-language": language})
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.fixture
def refused(make_message) -> InboundMessage:
    return make_message(
        status=Status.REJECTED,
        **stored("last_error", Text(intake.REFUSED, reason=Text(texts.TOO_MANY_PARTS, limit=500))),
        warnings=stored_all(
            [
                Text(texts.UNREADABLE_FILENAME, part=3, error="unknown encoding: x-ы"),
                "InvalidBase64PaddingDefect",
            ]
        ),
    )


def test_a_refused_message_shows_its_reason_in_russian_on_the_list(admin_client, refused):
    assert refused.last_error == ("refused: more than 500 MIME parts (PRICEFEED_MIME_MAX_PARTS)")
    text = page(admin_client, MESSAGES, "ru")

    assert "отклонено: больше 500 частей MIME (PRICEFEED_MIME_MAX_PARTS)" in text
    assert "refused: more than" not in text


def test_a_refused_message_shows_its_reason_and_warnings_in_russian_on_its_page(
    admin_client, refused
):
    url = reverse("admin:mailboxes_inboundmessage_change", args=[refused.pk])
    text = page(admin_client, url, "ru")

    assert "отклонено: больше 500 частей MIME (PRICEFEED_MIME_MAX_PARTS)" in text
    assert "часть 3: имя файла не читается (unknown encoding: x-ы)" in text
    assert "InvalidBase64PaddingDefect" in text  # a library's text, as it is


def test_in_english_the_stored_reason_is_shown_as_stored(admin_client, refused):
    url = reverse("admin:mailboxes_inboundmessage_change", args=[refused.pk])

    assert refused.last_error in page(admin_client, url, "en")


def test_a_message_marked_failed_keeps_english_and_shows_russian(
    admin_client, admin_user, make_message
):
    message = make_message(status=Status.RETRYABLE)
    with translation.override("ru"):
        admin_client.post(
            MESSAGES,
            {"action": "mark_failed", "_selected_action": [message.pk]},
            headers={"accept-language": "ru"},
        )
    message.refresh_from_db()

    assert message.status == Status.FAILED
    assert message.last_error == Text(MARKED_FAILED_BY, user=admin_user.username)
    assert message.last_error_text == as_json(Text(MARKED_FAILED_BY, user=admin_user.username))
    assert f"помечено как завершённое с ошибкой пользователем {admin_user.username}" in page(
        admin_client, MESSAGES, "ru"
    )


def test_a_mailbox_error_shows_in_russian(admin_client, mailbox):
    Mailbox.objects.filter(pk=mailbox.pk).update(
        **stored("last_error", Text(texts.LEASE_NOT_RENEWED, mailbox=str(mailbox.pk)))
    )
    url = reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk])

    assert f"аренда почтового ящика {mailbox.pk} не продлена вовремя" in page(
        admin_client, MAILBOXES, "ru"
    )

    error = Text(
        texts.LEASE_LOST_IN_STEP,
        mailbox=str(mailbox.pk),
        error=Text(texts.NOT_RECORDED, error="OSError: disk full"),
    )
    Mailbox.objects.filter(pk=mailbox.pk).update(
        last_error=str(error), last_error_text=as_json(error)
    )
    text = page(admin_client, url, "ru")

    assert (
        f"аренда почтового ящика {mailbox.pk} не продлена вовремя; шаг, который выполнялся, "
        "не удался: не удалось записать сообщение: OSError: disk full"
    ) in text
