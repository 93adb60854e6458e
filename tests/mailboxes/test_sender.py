"""mailboxes.sender: the From field read as RFC 5322 reads it. A comment or a display
name never supplies the sender's address; an address it holds is reported."""

from __future__ import annotations

import pytest

from mailboxes.mime import _decoded, header_fields
from mailboxes.sender import addresses_in, mailboxes, sender


@pytest.mark.parametrize(
    ("field", "address", "shown"),
    [
        # The two forgeries of issue #30.
        (
            "attacker@evil.example (<prices@supplier.ru>)",
            "attacker@evil.example",
            "prices@supplier.ru",
        ),
        (
            '"prices@supplier.ru" <attacker@evil.example>',
            "attacker@evil.example",
            "prices@supplier.ru",
        ),
        (
            "prices@supplier.ru <attacker@evil.example>",
            "attacker@evil.example",
            "prices@supplier.ru",
        ),
        (
            "(prices@supplier.ru) attacker@evil.example",
            "attacker@evil.example",
            "prices@supplier.ru",
        ),
        (
            '"<prices@supplier.ru>" <attacker@evil.example>',
            "attacker@evil.example",
            "prices@supplier.ru",
        ),
        ("Sales <sales@acme.test>", "sales@acme.test", ""),
        ("sales@acme.test", "sales@acme.test", ""),
        ("Sales Dept <Sales@Acme.TEST>", "sales@acme.test", ""),
        # A mail program that repeats the address as the name: nothing to report.
        ('"sales@acme.test" <sales@acme.test>', "sales@acme.test", ""),
        ("sales@acme.test (Sales Dept)", "sales@acme.test", ""),
        ('"Doe, John" <john@acme.test>', "john@acme.test", ""),
        ('"john \\"JD\\" doe" <john@acme.test>', "john@acme.test", ""),
        ("<@relay.example:sales@acme.test>", "sales@acme.test", ""),
        ('"john doe"@acme.test', '"john doe"@acme.test', ""),
        ("Team: sales@acme.test;", "sales@acme.test", ""),
        ("undisclosed-recipients:;", "", ""),
        ("Sales", "", ""),
        ("", "", ""),
        ("(unterminated <prices@supplier.ru>", "", ""),
        ('"unterminated <prices@supplier.ru>', "", ""),
    ],
)
def test_only_an_angle_addr_or_an_addr_spec_gives_the_address(field, address, shown):
    found = sender(field)

    assert (found.address, found.shown) == (address, shown)


def test_an_encoded_display_name_is_decoded_before_it_is_looked_at():
    field = "=?utf-8?q?prices=40supplier=2Eru?= <attacker@evil.example>"

    assert sender(field, decode=_decoded).shown == "prices@supplier.ru"
    assert sender(field, decode=_decoded).address == "attacker@evil.example"


def test_every_mailbox_of_a_list_is_counted():
    assert sender("a@x.ru, B <b@y.ru>").count == 2
    assert sender('"a@x.ru, b@y.ru" <c@z.ru>').count == 1
    assert sender("c@z.ru (a@x.ru, b@y.ru)").count == 1
    assert [m.address for m in mailboxes("G: a@x.ru, b@y.ru; c@z.ru")] == [
        "a@x.ru",
        "b@y.ru",
        "c@z.ru",
    ]


def test_addresses_in_free_text_are_found_between_other_at_signs():
    assert list(addresses_in("no address here")) == []
    assert list(addresses_in("@@ x@ @y a@b.ru, c@d.ru")) == ["a@b.ru", "c@d.ru"]
    assert list(addresses_in("@" * 5000)) == []


def test_an_other_address_after_the_senders_own_is_still_shown():
    assert sender('"sales@acme.test prices@supplier.ru" <sales@acme.test>').shown == (
        "prices@supplier.ru"
    )


def test_recorded_fields_carry_the_shown_address():
    raw = b'From: "prices@supplier.ru" <attacker@evil.example>\r\n\r\n'

    fields = header_fields(raw)

    assert fields.from_address == "attacker@evil.example"
    assert fields.from_shown == "prices@supplier.ru"


@pytest.mark.parametrize("fold", [b" ", b"\r\n "])
def test_an_angle_addr_far_to_the_right_is_still_the_sender(fold):
    # Cut where from_header is cut (998 characters), the field would read as from
    # sales@acme.test; whole, it is from the address in angle brackets.
    raw = b"From: sales@acme.test" + fold * 1200 + b"<attacker@evil.example>\r\n\r\n"

    fields = header_fields(raw)

    assert fields.from_address == "attacker@evil.example"
    assert fields.from_shown == "sales@acme.test"


def test_a_from_longer_than_what_is_read_gives_no_address():
    raw = b"From: sales@acme.test" + b" " * 5000 + b"<attacker@evil.example>\r\n\r\n"

    assert header_fields(raw).from_address == ""
