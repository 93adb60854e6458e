"""The sender a From field names, read the way RFC 5322 reads it.

Only an ``angle-addr`` (``Name <a@b>``) or a bare ``addr-spec`` (``a@b``) gives an
address. A comment (``a@b (<c@d>)``) and a display name (``"c@d" <a@b>``) are text:
they never supply the address, but when one of them holds an address other than the
sender's it is reported (``Sender.shown``), since that is how a forged sender looks to
a reader whose mail program shows the name.

The parser is ours rather than ``email.utils.getaddresses``: that function's handling
of such fields changed within patch releases (the strict parsing of CVE-2023-27043,
backported to some 3.11 and 3.12 releases and not others), and the sender must not
depend on which interpreter reads the mail. One pass over the field, no recursion, no
regular expression that can backtrack: linear in the field's length.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

_WSP = " \t\r\n"
# Characters that cannot be part of an address seen inside free text.
_NOT_IN_ADDRESS = frozenset(' \t\r\n<>()[]",;:@\\')


@dataclass
class Mailbox:
    """One mailbox of a field: its address ("" when it has none), its display name and
    its comments, as written (quoted strings unquoted, encoded words not decoded)."""

    address: str = ""
    display: str = ""
    comments: list[str] = field(default_factory=list)


@dataclass
class _Building:
    words: list[str] = field(default_factory=list)  # atoms and quoted strings, as written
    texts: list[str] = field(default_factory=list)  # the same, quoted strings unquoted
    angle: str | None = None
    comments: list[str] = field(default_factory=list)
    broken: bool = False  # an unterminated quoted string: where it ends is not known

    def done(self) -> Mailbox | None:
        if not (self.words or self.angle is not None or self.comments):
            return None
        if self.angle is not None:
            # A route (<@relay:a@b>, obsolete) is not part of the address.
            address = self.angle.rpartition(":")[2]
            display = " ".join(self.texts)
        else:
            address = "".join(self.words)
            display = ""
        local, at, domain = address.rpartition("@")
        if self.broken or not (at and local and domain):
            address = ""
        return Mailbox(address=address, display=display, comments=self.comments)


def _quoted(value: str, i: int) -> tuple[str, str, int, bool]:
    """The quoted string starting at ``value[i]`` ('"'): (as written, unquoted, the index
    after it, whether it is terminated); an unterminated one runs to the end."""
    n = len(value)
    j = i + 1
    text: list[str] = []
    while j < n:
        c = value[j]
        if c == "\\" and j + 1 < n:
            text.append(value[j + 1])
            j += 2
            continue
        j += 1
        if c == '"':
            return value[i:j], "".join(text), j, True
        text.append(c)
    return value[i:j], "".join(text), j, False


def _comment(value: str, i: int) -> tuple[str, int]:
    """The comment starting at ``value[i]`` ("("), nested ones included: (its text, the
    index after it); an unterminated one runs to the end."""
    n = len(value)
    depth = 0
    j = i
    text: list[str] = []
    while j < n:
        c = value[j]
        if c == "\\" and j + 1 < n:
            text.append(value[j + 1])
            j += 2
            continue
        j += 1
        if c == "(":
            depth += 1
            if depth == 1:
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                break
        text.append(c)
    return "".join(text), j


def mailboxes(value: str) -> list[Mailbox]:
    """The mailboxes of an address-list field, in order (a group's name is dropped and
    its members kept)."""
    found: list[Mailbox] = []
    current = _Building()

    def finish() -> None:
        nonlocal current
        mailbox = current.done()
        if mailbox is not None:
            found.append(mailbox)
        current = _Building()

    n = len(value)
    i = 0
    while i < n:
        c = value[i]
        if c in _WSP:
            i += 1
        elif c == "(":
            text, i = _comment(value, i)
            current.comments.append(text)
        elif c == '"':
            written, text, i, terminated = _quoted(value, i)
            current.broken = current.broken or not terminated
            current.words.append(written)
            current.texts.append(text)
        elif c == "<":
            end = value.find(">", i + 1)
            end = n if end < 0 else end
            if current.angle is None:
                current.angle = "".join(value[i + 1 : end].split())
            i = end + 1
        elif c == ",":
            finish()
            i += 1
        elif c == ":" and current.angle is None:
            current = _Building(comments=current.comments)  # a group's name: not a mailbox
            i += 1
        elif c == ";":
            finish()
            i += 1
        else:
            j = i + 1
            while j < n and value[j] not in _WSP and value[j] not in '()"<>,:;':
                j += 1
            current.words.append(value[i:j])
            current.texts.append(value[i:j])
            i = j
    finish()
    return found


def addresses_in(text: str) -> Iterator[str]:
    """The address-like runs (``x@y``) in free text, in order. Linear: the scan around
    each "@" stops at the "@" before and after it."""
    at = text.find("@")
    while at >= 0:
        start = at
        while start > 0 and text[start - 1] not in _NOT_IN_ADDRESS:
            start -= 1
        end = at + 1
        while end < len(text) and text[end] not in _NOT_IN_ADDRESS:
            end += 1
        if start < at and end > at + 1:
            yield text[start:end]
        at = text.find("@", at + 1)


@dataclass(frozen=True)
class Sender:
    """The sender's ``address`` (lower case, "" when the field gives none), how many
    mailboxes with an address the field holds, and ``shown``: an address other than the
    sender's that its display name or a comment holds ("" when none does)."""

    address: str
    count: int = 0
    shown: str = ""


def sender(value: str, decode=lambda text: text) -> Sender:
    """The sender of a From field: its first mailbox with an address. ``decode`` turns a
    display name's encoded words into text before it is looked at for an address."""
    with_address = [m for m in mailboxes(value) if m.address]
    if not with_address:
        return Sender(address="")
    first = with_address[0]
    address = first.address.lower()
    texts = (decode(first.display), *first.comments)
    others = (
        found
        for text in texts
        for found in (run.strip(".").lower() for run in addresses_in(text))
        if found != address
    )
    shown = next(others, "")
    return Sender(address=address, count=len(with_address), shown=shown)
