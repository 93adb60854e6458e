"""mailboxes.texts: English where it is stored and logged, translated where it is shown."""

from __future__ import annotations

import pickle
import socket

from django.utils import translation

from mailboxes.exceptions import FolderMissing
from mailboxes.imap import ConnectionSettings, probe_error
from mailboxes.texts import Text, as_json, text_of, translated

SETTINGS = ConnectionSettings(
    host="imap.supplier.example", port=993, security="ssl", username="buyer", password="x"
)


def test_a_text_is_its_english_and_says_itself_again_in_russian():
    text = probe_error(FolderMissing("x"), SETTINGS, logged_in=True)

    assert text == "logged in; folder 'INBOX' cannot be selected"
    with translation.override("ru"):
        assert translated(as_json(text)) == "вход выполнен, но папку 'INBOX' открыть не удаётся"
    with translation.override("en"):
        assert translated(as_json(text)) == text


def test_nested_texts_are_translated_inside_their_sentence():
    text = probe_error(ConnectionRefusedError(), SETTINGS, logged_in=True)
    stored = as_json(text)

    assert text == (
        "logged in, then: connection to imap.supplier.example:993 refused (nothing listening?)"
    )
    with translation.override("ru"):
        assert translated(stored) == (
            "вход выполнен, затем: imap.supplier.example:993: в подключении отказано "
            "(там ничего не слушает?)"
        )


def test_a_plain_string_and_an_unknown_msgid_are_shown_as_they_are():
    with translation.override("ru"):
        assert translated("connected somehow") == "connected somehow"
        assert translated(Text("no such msgid %(n)s", n=1)) == "no such msgid 1"
    assert translated(as_json("plain")) == "plain"
    assert as_json("") == {}


def test_an_exception_raised_with_a_text_gives_it_back_and_pickles_with_its_msgid():
    exc = FolderMissing(
        Text("folder %(folder)s cannot be selected: %(reason)s", folder="'X'", reason="NO")
    )

    assert isinstance(text_of(exc), Text)
    assert text_of(socket.gaierror("plain")) == "plain"
    again = pickle.loads(pickle.dumps(text_of(exc)))
    assert again == "folder 'X' cannot be selected: NO"
    assert again.as_json() == text_of(exc).as_json()
