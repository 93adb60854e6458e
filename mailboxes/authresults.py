"""Authentication-Results (RFC 8601): what the receiving mail server found out about a
message's sender, and which of those header fields to believe.

Any sender can write an Authentication-Results field into its message; only the
receiving server's own is evidence. A receiving server prepends its field above the
header block the message came with, so of all the fields only one is believed: the
topmost one whose authserv-id is in PRICEFEED_AUTHSERV_IDS (compared case-insensitively;
a job ID that OpenDKIM or OpenDMARC appends after a slash is ignored).

- A field with another authserv-id is ignored wherever it is. Above the believed one it
  was added after our receiving server (by a hop inside our own network); below it, it
  came with the message. Either way it is not our server's word, and a forged
  ``<other id>; dmarc=pass`` placed above the real field changes nothing.
- A field below the believed one, even with the same authserv-id, came with the
  message: the sender wrote it. It is never read.

That reasoning holds only when the receiving server always writes its field (so the
topmost one with its id is really its own) and, as RFC 8601 §5 requires, removes or
renames the incoming fields that claim its authserv-id. Otherwise a message it left
unchecked would carry the sender's forged field on top. docs/operations.md (trusted
senders) says what to set up on the MTA.

A verdict passes on ``dmarc=pass`` whose ``header.from`` is the From domain (a pass that
names no ``header.from`` does not count: which From it was about cannot be told), or on
a ``dkim=pass`` whose
signing domain (``header.d``, else the domain of ``header.i``) is aligned with the From
domain. Alignment here is relaxed alignment without the public suffix list: the two
domains are equal, or one is a subdomain of the other (never a bare top-level domain).
DMARC (RFC 7489 §3.1) compares organizational domains, which needs that list; shipping
a copy means a file that changes weekly and goes stale silently. The rule here is
stricter than DMARC for sibling subdomains (``a.supplier.ru`` and ``b.supplier.ru`` do
not align) and looser only where the signer is the operator of a public suffix above the
From domain (a registry, a dynamic-DNS provider), a party that already controls that
domain's DNS. The receiving server's own DMARC result, computed with the list, comes
first: ``dmarc=fail`` is final, whatever DKIM says, and a DMARC result about another
``header.from`` than the message's From domain means the server read another From and
fails the message too. A message with several From fields or several From addresses
never passes: RFC 7489 §6.6.1 leaves such mail to local policy, and which address the
server checked cannot be told. The From address is read by mailboxes.sender, as RFC 5322
reads it: a comment or a display name never supplies it.

The parser is bounded for hostile input: one field is read up to MAX_FIELD_BYTES (a
longer one is not believed), at most MAX_FIELDS fields are looked at, every character is
looked at a bounded number of times (no recursion; the regular expressions have no
nested quantifiers), and it never raises. The MIME budgets
(mailboxes/mimebudget.py) have bounded the header block before this module sees it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from core.storedtext import Text, foreign, gettext_noop

from . import sender
from .mime import HEADER_SCAN_LIMIT, clean

# The verdict's reasons, said in the reader's language where a message's page shows them
# (core.storedtext); what a field says ("dmarc=fail, dkim=none") is a value, as written.
NOTHING_TRUSTED = gettext_noop("no authserv-id is trusted (PRICEFEED_AUTHSERV_IDS is empty)")
NO_FIELD = gettext_noop("no Authentication-Results from %(names)s")
UNREADABLE = gettext_noop("unreadable: %(problem)s")
BY = gettext_noop("%(reason)s (Authentication-Results from %(authserv_id)s)")
NO_FROM = gettext_noop("the message has no From address")
FROM_FIELDS = gettext_noop("the message has %(count)s From fields")
FROM_ADDRESSES = gettext_noop("the From field holds more than one address")
DMARC_OTHER_DOMAIN = gettext_noop(
    "dmarc=%(result)s is about header.from=%(checked)s, not the From domain %(domain)s"
)
DMARC_PASSED = gettext_noop("dmarc=pass for %(domain)s")
DKIM_ALIGNED = gettext_noop("dkim=pass header.d=%(signer)s, aligned with %(domain)s")
NOTHING_ALIGNED = gettext_noop("%(summary)s; nothing aligned with %(domain)s passed")
# Why a field was not read whole, inside UNREADABLE (a Text, so said in the reader's
# language too).
UNTERMINATED_COMMENT = gettext_noop("unterminated comment")
UNTERMINATED_QUOTED = gettext_noop("unterminated quoted string")
VALUE_TOO_LONG = gettext_noop("a value longer than %(limit)s characters")
FIELD_TOO_LONG = gettext_noop("longer than %(limit)s characters")
FIELD_TOO_MANY_BYTES = gettext_noop("longer than %(limit)s bytes")
NO_AUTHSERV_ID = gettext_noop("no authserv-id")
UNEXPECTED_TEXT = gettext_noop("unexpected text %(text)s")
TOO_MANY_RESULTS = gettext_noop("more than %(limit)s results")
NO_RESULTS = gettext_noop("no results")
NO_RESULT_VALUE = gettext_noop("%(method)s without a result")
UNEXPECTED_AFTER = gettext_noop("unexpected text after %(method)s=%(result)s")
TOO_MANY_PROPERTIES = gettext_noop("more than %(limit)s properties in %(method)s=%(result)s")
# How long a value of a reason may be: a reason (a template, two values, the authserv-id)
# stays one line of at most 500 characters.
REASON_VALUE = 100

# One Authentication-Results field, unfolded. Real ones are well under 2 KiB (Gmail's,
# with ARC comments, about 1 KiB); a longer one is not believed.
MAX_FIELD_BYTES = 8192
# Fields looked at, top down. The believed field is the receiving server's, prepended
# above everything the sender wrote, so it is among the first few.
MAX_FIELDS = 100
# Results (resinfo) of one field and properties of one result; past them the field is
# not believed (a dropped result could be the one that says fail).
MAX_RESULTS = 50
MAX_PROPERTIES = 30
# Characters kept of a value (a domain has at most 253).
MAX_VALUE = 320
# What the From field is read to, to count its addresses (as mailboxes.mime reads it).
FROM_READ_LIMIT = 4096
# dkim results kept in a verdict.
MAX_DKIM_KEPT = 10


@dataclass(frozen=True)
class ResInfo:
    """One result of a field: ``method=result``, its reason and its properties
    (``("header.d", "supplier.ru")``; names in lower case, values as written)."""

    method: str
    result: str
    reason: str = ""
    properties: tuple[tuple[str, str], ...] = ()

    def prop(self, name: str) -> str:
        """The value of the first property called ``name`` ("" when there is none)."""
        return next((value for key, value in self.properties if key == name), "")


@dataclass(frozen=True)
class AuthResults:
    """One Authentication-Results field as read. ``problem`` says why it was not read
    whole (a field with a problem is never believed to say pass); ``results`` is empty
    for ``none``."""

    authserv_id: str
    version: str = ""
    results: tuple[ResInfo, ...] = ()
    problem: str = ""


# -- the parser -----------------------------------------------------------------------

_WSP = " \t\r\n"
_KEYWORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_DIGITS = re.compile(r"[0-9]+")
# A run of a value outside quotes: up to whitespace, ";", a comment or a quote.
_RUN = re.compile(r'[^ \t\r\n;()"]+')
# Text skipped after something unreadable, up to the next ";" or what must be skipped
# as a whole (a comment, a quoted string, in which a ";" does not count).
_SKIP = re.compile(r'[^;("]+')
_COMMENT_STOP = re.compile(r"[()\\]")
# The two alternatives start with different characters: no backtracking between them.
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)


class _Reader:
    """A position in one field's text, with the RFC 5322/8601 lexical steps."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.problem = ""

    def fail(self, problem: Text) -> None:
        if not self.problem:  # the first one says what went wrong
            self.problem = problem

    def peek(self) -> str:
        return self.s[self.i] if self.i < self.n else ""

    def at_stop(self) -> bool:
        """At the end or at the ";" that ends a result."""
        return self.i >= self.n or self.s[self.i] == ";"

    def cfws(self) -> None:
        """Skips white space and comments."""
        while self.i < self.n:
            c = self.s[self.i]
            if c in _WSP:
                self.i += 1
            elif c == "(":
                self._comment()
            else:
                return

    def _comment(self) -> None:
        """Skips a comment (nested ones and quoted pairs inside), starting at "("."""
        depth = 0
        while True:
            m = _COMMENT_STOP.search(self.s, self.i)
            if m is None:
                self.fail(UNTERMINATED_COMMENT)
                self.i = self.n
                return
            self.i = m.end()
            c = m.group()
            if c == "\\":
                self.i += 1
            elif c == "(":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return

    def keyword(self) -> str:
        m = _KEYWORD.match(self.s, self.i)
        if m is None:
            return ""
        self.i = m.end()
        return m.group().lower()

    def _quoted(self) -> str | None:
        m = _QUOTED.match(self.s, self.i)
        if m is None:
            self.fail(UNTERMINATED_QUOTED)
            self.i = self.n
            return None
        self.i = m.end()
        return _QUOTED_PAIR.sub(r"\1", m.group(1))

    def value(self) -> str:
        """A value, a property value or an authserv-id: quoted strings and runs of other
        characters up to white space, ";" or a comment, joined (``"a b"@x.ru`` is
        ``a b@x.ru``)."""
        parts: list[str] = []
        size = 0
        while self.i < self.n:
            if self.s[self.i] == '"':
                part = self._quoted()
                if part is None:
                    break
            else:
                m = _RUN.match(self.s, self.i)
                if m is None:
                    break
                self.i = m.end()
                part = m.group()
            size += len(part)
            if size > MAX_VALUE:
                # Cut, a value could pass for another ("x.supplier.ru.evil.example"
                # for "x.supplier.ru"): the field is not read whole.
                self.fail(Text(VALUE_TOO_LONG, limit=MAX_VALUE))
            else:
                parts.append(part)
        return "".join(parts)

    def skip(self) -> None:
        """Skips to the next ";" outside comments and quoted strings (not past it)."""
        while self.i < self.n:
            c = self.s[self.i]
            if c == ";":
                return
            if c == "(":
                self._comment()
            elif c == '"':
                if self._quoted() is None:
                    return
            else:
                m = _SKIP.match(self.s, self.i)
                assert m is not None  # c is none of ;("
                self.i = m.end()


def parse(value: str) -> AuthResults:
    """Reads the value of one Authentication-Results field (unfolded, without the field
    name). Never raises: what it cannot read is named in ``problem``."""
    if len(value) > MAX_FIELD_BYTES:
        return AuthResults(
            authserv_id=authserv_id_of(value),
            problem=Text(FIELD_TOO_LONG, limit=MAX_FIELD_BYTES),
        )
    r = _Reader(value)
    r.cfws()
    start = r.i
    authserv_id = r.value()
    version = ""
    # Whether a result comes next without a ";" before it.
    result_due = False
    if "=" in authserv_id:
        # The field starts with a result: it has no authserv-id (Exchange Online writes
        # its fields so). Its results are read, but nothing says whose they are.
        r.fail(NO_AUTHSERV_ID)
        authserv_id = ""
        r.i = start
        result_due = True
    elif not authserv_id:
        return AuthResults(authserv_id="", problem=NO_AUTHSERV_ID)
    else:
        r.cfws()
        if m := _DIGITS.match(r.s, r.i):
            version = m.group()
            r.i = m.end()
    results: list[ResInfo] = []
    attempts = 0
    while True:
        r.cfws()
        if r.i >= r.n:
            break
        if not result_due:
            if r.peek() != ";":
                r.fail(Text(UNEXPECTED_TEXT, text=repr(r.s[r.i : r.i + 20])))
                r.skip()
                continue
            r.i += 1
            r.cfws()
        result_due = False
        if r.at_stop():  # an empty result (";;" or a trailing ";")
            continue
        if len(results) == MAX_RESULTS:
            r.fail(Text(TOO_MANY_RESULTS, limit=MAX_RESULTS))
            break
        attempts += 1
        info = _resinfo(r)
        if info is not None:
            results.append(info)
    if not attempts and not r.problem:
        r.fail(NO_RESULTS)
    return AuthResults(
        authserv_id=authserv_id, version=version, results=tuple(results), problem=r.problem
    )


def _resinfo(r: _Reader) -> ResInfo | None:
    """One ``method=result [reason=...] [ptype.property=value ...]``; None for ``none``
    or for text that is not a result (skipped, and named in the reader's problem)."""
    method = r.keyword()
    if not method:
        r.fail(Text(UNEXPECTED_TEXT, text=repr(r.s[r.i : r.i + 20])))
        r.skip()
        return None
    r.cfws()
    if r.peek() == "/":  # a method version: dkim/1=pass
        r.i += 1
        r.cfws()
        if m := _DIGITS.match(r.s, r.i):
            r.i = m.end()
        r.cfws()
    if r.peek() != "=":
        r.cfws()
        if method == "none" and r.at_stop():
            return None
        r.fail(Text(NO_RESULT_VALUE, method=method))
        r.skip()
        return None
    r.i += 1
    r.cfws()
    result = r.keyword()
    if not result:
        r.fail(Text(NO_RESULT_VALUE, method=method))
        r.skip()
        return None
    reason = ""
    properties: list[tuple[str, str]] = []
    while True:
        r.cfws()
        if r.at_stop():
            break
        name = r.keyword()
        if name:
            r.cfws()
            if r.peek() == ".":
                r.i += 1
                r.cfws()
                prop = r.keyword()
                name = f"{name}.{prop}" if prop else ""
                r.cfws()
        if not name or r.peek() != "=":
            r.fail(Text(UNEXPECTED_AFTER, method=method, result=result))
            r.skip()
            break
        r.i += 1
        r.cfws()
        value = r.value()
        if name == "reason":
            reason = reason or value
        elif len(properties) == MAX_PROPERTIES:
            r.fail(Text(TOO_MANY_PROPERTIES, limit=MAX_PROPERTIES, method=method, result=result))
            r.skip()
            break
        else:
            # Properties without a ptype (Exchange's "action=none") are kept by name.
            properties.append((name, value))
    return ResInfo(method=method, result=result, reason=reason, properties=tuple(properties))


def authserv_id_of(value: str) -> str:
    """The authserv-id a field's value starts with (after comments), read on its own:
    cheap, for the fields that are only looked at to be passed over."""
    r = _Reader(value[:MAX_FIELD_BYTES])
    r.cfws()
    return r.value()


def authserv_key(authserv_id: str) -> str:
    """An authserv-id as compared: lower case, no trailing dot, no "/<job ID>"."""
    return authserv_id.partition("/")[0].strip().rstrip(".").lower()


# -- reading a message's header block -------------------------------------------------

_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n|$)")
_AUTH_RESULTS = b"authentication-results"
_FROM = b"from"


class _Buffer:
    __slots__ = ("cut", "data", "limit")

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.limit = limit
        self.cut = False

    def add(self, piece: bytes) -> None:
        room = self.limit - len(self.data)
        if len(piece) > room:
            self.cut = True
            piece = piece[: max(room, 0)]
        self.data += piece


@dataclass(frozen=True)
class RawField:
    """A field's value as text, unfolded; ``cut`` when it was longer than read."""

    value: str
    cut: bool = False


@dataclass(frozen=True)
class HeaderScan:
    """What a verdict needs of a header block: its Authentication-Results fields top
    down (the first MAX_FIELDS), how many From fields it has, and the first one."""

    auth_results: tuple[RawField, ...] = ()
    from_fields: int = 0
    from_value: str = ""


def _text(data: bytes) -> str:
    # RFC 8601 values are ASCII; comments may carry UTF-8 (RFC 6532). Anything else
    # becomes U+FFFD, which matches no keyword.
    return data.decode("utf-8", errors="replace")


def scan_headers(raw: bytes) -> HeaderScan:
    """Reads, in one pass over at most the first HEADER_SCAN_LIMIT bytes of a message's
    header block (stopping at the empty line that ends it), its Authentication-Results
    fields in order and its From fields."""
    fields: list[_Buffer] = []
    from_buffer: _Buffer | None = None
    from_fields = 0
    current: _Buffer | None = None
    for m in _LINE.finditer(memoryview(raw)[:HEADER_SCAN_LIMIT]):
        line = m.group().rstrip(b"\r\n")
        if not line:
            break
        if line[:1] in (b" ", b"\t"):
            if current is not None:
                current.add(line)
            continue
        name, colon, value = line.partition(b":")
        key = name.strip().lower()
        current = None
        if not colon:
            continue
        if key == _AUTH_RESULTS and len(fields) < MAX_FIELDS:
            current = _Buffer(MAX_FIELD_BYTES)
            fields.append(current)
        elif key == _FROM:
            from_fields += 1
            if from_buffer is None:
                current = from_buffer = _Buffer(FROM_READ_LIMIT)
        if current is not None:
            current.add(value)
    return HeaderScan(
        auth_results=tuple(RawField(_text(bytes(f.data)), f.cut) for f in fields),
        from_fields=from_fields,
        from_value=_text(bytes(from_buffer.data)) if from_buffer is not None else "",
    )


# -- the verdict ----------------------------------------------------------------------


@dataclass(frozen=True)
class SenderVerdict:
    """What the receiving server's believed Authentication-Results field says of the
    sender, and whether that authenticates the From address's domain.

    ``checked`` is False when no authserv-id is trusted at all (nothing was looked at);
    ``authserv_id`` is the believed field's ("" when none was believed); ``dmarc`` and
    ``spf`` are their first results ("" when the field has none), with the domain
    checked; ``dkim`` one entry per signature; ``aligned_domain`` the domain whose
    authentication counted; ``reason`` says it in one line."""

    authenticated: bool
    reason: str  # a Text: said in the reader's language
    checked: bool = True
    authserv_id: str = ""
    from_domain: str = ""
    dmarc: str = ""
    dkim: tuple[str, ...] = ()
    spf: str = ""
    aligned_domain: str = ""

    def as_dict(self) -> dict:
        """The verdict as a match report keeps it: a reason of ours in its stored form
        (core.storedtext), said in the reader's language where it is shown."""
        return {**asdict(self), "reason": foreign(self.reason).as_json()}


def domain_of(value: str) -> str:
    """The domain of an address or a domain, as compared: lower case, no trailing dot,
    internationalized names in their ASCII (xn--) form."""
    domain = value.rpartition("@")[2].strip().strip("<>").rstrip(".").lower()
    if not domain.isascii():
        try:
            domain = domain.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    return domain


def aligned(signer: str, from_domain: str) -> bool:
    """Relaxed alignment without the public suffix list (see the module's docstring):
    equal, or one a subdomain of the other, the shorter being more than a top-level
    domain."""
    if not signer or not from_domain:
        return False
    if signer == from_domain:
        return True
    shorter, longer = sorted((signer, from_domain), key=len)
    return "." in shorter.strip(".") and longer.endswith("." + shorter)


def _dkim_domain(info: ResInfo) -> str:
    return domain_of(info.prop("header.d") or info.prop("header.i"))


def _dmarc_domain(info: ResInfo) -> str:
    return domain_of(info.prop("header.from"))


def _spf_domain(info: ResInfo) -> str:
    return domain_of(info.prop("smtp.mailfrom") or info.prop("smtp.helo"))


def _with(result: str, name: str, value: str) -> str:
    return f"{result} {name}={value}" if value else result


def _summary(results: Sequence[ResInfo]) -> str:
    """ "dmarc=fail, dkim=pass header.d=other.example" — what the field says, short."""
    dmarc = [r for r in results if r.method == "dmarc"]
    dkim = [r for r in results if r.method == "dkim"]
    parts = ["dmarc=" + _with(r.result, "header.from", _dmarc_domain(r)) for r in dmarc[:2]] or [
        "dmarc=none"
    ]
    parts += ["dkim=" + _with(r.result, "header.d", _dkim_domain(r)) for r in dkim[:3]] or [
        "dkim=none"
    ]
    if len(dkim) > 3:
        parts.append(f"and {len(dkim) - 3} more dkim results")
    return ", ".join(parts)


def _from_addresses(from_value: str) -> int:
    """How many addresses a From field holds (RFC 5322 allows one mailbox per From
    unless a Sender says who sent; DMARC evaluates one), as mailboxes.sender reads it."""
    return sender.sender(from_value).count


def sender_verdict(raw: bytes, *, from_address: str, authserv_ids: Sequence[str]) -> SenderVerdict:
    """The verdict for a message (``raw``: its bytes, or just its header block) whose
    From address is ``from_address``, believing only the topmost Authentication-Results
    field with one of ``authserv_ids``. Never raises."""
    trusted = {authserv_key(i) for i in authserv_ids if authserv_key(i)}
    if not trusted:
        return SenderVerdict(
            authenticated=False,
            reason=NOTHING_TRUSTED,
            checked=False,
        )
    return judge(
        scan_headers(raw),
        from_address=from_address,
        trusted=trusted,
        names=" or ".join(sorted(trusted)),
    )


def _problem(problem: str) -> Text:
    """Why a field was not read, as a reason's value: the reader's Text (its values are
    tokens and a repr, one line, cut by Text), or any other text cleaned and cut."""
    if isinstance(problem, Text):
        return problem
    return foreign(clean(problem, REASON_VALUE))


def judge(scan: HeaderScan, *, from_address: str, trusted: set[str], names: str) -> SenderVerdict:
    """The verdict on a scanned header block (see sender_verdict); ``trusted`` are the
    authserv-ids as compared (authserv_key), ``names`` how the reason names them."""
    from_domain = domain_of(from_address) if "@" in from_address else ""
    believed = _believed(scan, trusted)
    if believed is None:
        return SenderVerdict(
            authenticated=False,
            reason=Text(NO_FIELD, names=clean(names, 2 * REASON_VALUE)),
            from_domain=clean(from_domain, 255),
        )
    authserv_id = clean(believed.authserv_id, 255)

    def by(reason: Text) -> Text:
        return Text(BY, reason=reason, authserv_id=clean(authserv_id, REASON_VALUE))

    if believed.problem:
        return SenderVerdict(
            authenticated=False,
            reason=by(Text(UNREADABLE, problem=_problem(believed.problem))),
            authserv_id=authserv_id,
            from_domain=clean(from_domain, 255),
        )
    results = believed.results
    dmarc = [r for r in results if r.method == "dmarc"]
    dkim = [r for r in results if r.method == "dkim"]
    spf = [r for r in results if r.method == "spf"]
    authenticated, reason, aligned_domain = _decide(scan, from_domain, results)
    return SenderVerdict(
        authenticated=authenticated,
        reason=by(reason),
        authserv_id=authserv_id,
        from_domain=clean(from_domain, 255),
        dmarc=clean(_with(dmarc[0].result, "header.from", _dmarc_domain(dmarc[0])), 300)
        if dmarc
        else "",
        dkim=tuple(
            clean(_with(r.result, "header.d", _dkim_domain(r)), 300) for r in dkim[:MAX_DKIM_KEPT]
        ),
        spf=clean(_with(spf[0].result, "smtp.mailfrom", _spf_domain(spf[0])), 300) if spf else "",
        aligned_domain=clean(aligned_domain, 255),
    )


def _believed(scan: HeaderScan, trusted: set[str]) -> AuthResults | None:
    """The first Authentication-Results field added by a trusted authserv-id, parsed
    (one cut at MAX_FIELD_BYTES is unreadable); None when there is none."""
    for raw_field in scan.auth_results:
        if authserv_key(authserv_id_of(raw_field.value)) not in trusted:
            continue
        believed = parse(raw_field.value)
        if raw_field.cut:
            return AuthResults(
                authserv_id=believed.authserv_id,
                problem=Text(FIELD_TOO_MANY_BYTES, limit=MAX_FIELD_BYTES),
            )
        return believed
    return None


def _decide(
    scan: HeaderScan, from_domain: str, results: tuple[ResInfo, ...]
) -> tuple[bool, Text, str]:
    """(authenticated, why, the domain aligned with From) from the trusted results: the
    From field must be one address; then DMARC about that domain decides, or a passing
    DKIM signature aligned with it."""
    dmarc = [r for r in results if r.method == "dmarc"]
    domain = clean(from_domain, REASON_VALUE)
    if not from_domain:
        return False, Text(NO_FROM), ""
    if scan.from_fields > 1:
        return False, Text(FROM_FIELDS, count=str(scan.from_fields)), ""
    if _from_addresses(scan.from_value) > 1:
        return False, Text(FROM_ADDRESSES), ""
    for r in dmarc:
        checked = _dmarc_domain(r)
        if checked and checked != from_domain:
            why = Text(
                DMARC_OTHER_DOMAIN,
                result=clean(r.result, REASON_VALUE),
                checked=clean(checked, REASON_VALUE),
                domain=domain,
            )
            return False, why, ""
    summary = clean(_summary(results), REASON_VALUE + REASON_VALUE // 2)
    if any(r.result == "fail" for r in dmarc):
        return False, foreign(summary), ""
    # A pass counts only when it says which From domain it was about: one that names
    # none may have been computed on another From than the one read here.
    if any(r.result == "pass" and _dmarc_domain(r) == from_domain for r in dmarc):
        return True, Text(DMARC_PASSED, domain=domain), from_domain
    for r in results:
        signer = _dkim_domain(r) if r.method == "dkim" else ""
        if r.method == "dkim" and r.result == "pass" and aligned(signer, from_domain):
            why = Text(DKIM_ALIGNED, signer=clean(signer, REASON_VALUE), domain=domain)
            return True, why, signer
    return False, Text(NOTHING_ALIGNED, summary=summary, domain=domain), ""
