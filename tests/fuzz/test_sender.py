"""Properties of mailboxes.sender: whatever a display name or a comment holds, the
sender's address is the one in angle brackets (or the bare one), and any text is read
without error into something no longer than itself."""

from __future__ import annotations

import string

from hypothesis import example, given
from hypothesis import strategies as st

from mailboxes.mime import header_fields
from mailboxes.sender import addresses_in, sender

_atoms = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=10)
addresses = st.builds(lambda local, domain: f"{local}@{domain}.ru", _atoms, _atoms)
# Free text a forger writes in a display name or a comment: addresses, brackets,
# quotes, commas, backslashes.
_free = st.lists(
    addresses.map(lambda a: f"<{a}>")
    | addresses
    | st.sampled_from(['"', "(", ")", "<", ">", ",", ";", ":", "\\", " ", "@"])
    | st.text(max_size=5),
    max_size=8,
).map("".join)


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def commented(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


@given(addresses, _free, _free)
@example("attacker@evil.ru", "prices@supplier.ru", "<prices@supplier.ru>")
def test_neither_a_display_name_nor_a_comment_supplies_the_address(address, name, comment):
    for field in (
        f"{quoted(name)} <{address}> {commented(comment)}",
        f"{commented(comment)} {address} {commented(name)}",
        f"{quoted(name)} {commented(comment)} <{address}>",
    ):
        found = sender(field)
        assert found.address == address, field
        assert found.count == 1, field
        others = {
            run.strip(".").lower() for text in (name, comment) for run in addresses_in(text)
        } - {address}
        assert found.shown in others if others else found.shown == "", field


@given(st.text(max_size=300))
def test_any_text_is_read_without_error_into_a_part_of_itself(field):
    found = sender(field)

    assert len(found.address) <= len(field)
    assert found.address == "" or "@" in found.address
    assert len(found.shown) <= len(field)


@given(addresses, addresses, st.integers(0, 6000), st.sampled_from([" ", "\r\n ", "\t"]))
@example("sales@acme.ru", "attacker@evil.ru", 1200, " ")
def test_padding_never_turns_a_display_name_into_the_recorded_sender(shown, address, pad, fold):
    """However far the angle-addr is pushed to the right, what recording keeps is its
    address, or none when the field is longer than what is read."""
    raw = f"From: {shown}{fold * pad}<{address}>\r\n\r\n".encode()

    assert header_fields(raw).from_address in (address, "")
