"""Properties of mailboxes.authresults: a field written the ways RFC 8601 allows (any
white space, folding, comments, quoting) reads back as what was written; any text reads
without an exception into bounded values; and no field a sender can add changes the
verdict on its message."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from mailboxes.authresults import (
    MAX_FIELD_BYTES,
    MAX_RESULTS,
    MAX_VALUE,
    AuthResults,
    ResInfo,
    parse,
    sender_verdict,
)

from .strategies import header_blocks, mutated

# -- well-formed fields, written every way the grammar allows -------------------------------

_keywords = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(lambda k: k != "none")
_ids = st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True)
_property_names = st.builds(
    lambda ptype, prop: f"{ptype}.{prop}",
    st.sampled_from(["header", "smtp", "policy", "body"]),
    st.sampled_from(["d", "i", "from", "mailfrom", "b", "s", "iprev"]),
)
# Bare values may hold "@", ".", "/", "+", "=" (base64); quoted ones anything printable.
_bare_values = st.from_regex(r"[A-Za-z0-9.@+/=_-]{1,24}", fullmatch=True)
_quoted_values = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\tжЯ"), max_size=24
)
# White space, folding and comments (nested, with ";" "=" and quoted pairs inside).
_CFWS = [" ", "  ", "\t", "\r\n ", "\r\n\t", " (comment) ", "(c)", " (a (nested; b=c) \\) d) "]
_required_cfws = st.sampled_from(_CFWS)
_optional_cfws = st.sampled_from(["", *_CFWS])


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def _written_value(draw: st.DrawFn, value: str) -> str:
    bare_ok = value and all(c not in ' \t\r\n;()"' for c in value)
    return value if bare_ok and draw(st.booleans()) else _quote(value)


@st.composite
def fields(draw: st.DrawFn) -> tuple[str, AuthResults]:
    """(the text of a field, what reading it must give)."""
    authserv_id = draw(_ids)
    version = draw(st.one_of(st.just(""), st.from_regex(r"[0-9]{1,3}", fullmatch=True)))
    text = draw(_optional_cfws) + authserv_id
    if version:
        text += draw(_required_cfws) + version
    infos = []
    for _ in range(draw(st.integers(0, 5))):
        method, result = draw(_keywords), draw(_keywords)
        reason = draw(st.one_of(st.none(), _bare_values, _quoted_values))
        properties = draw(
            st.lists(st.tuples(_property_names, _bare_values | _quoted_values), max_size=4)
        )
        text += draw(_optional_cfws) + ";" + draw(_optional_cfws)
        text += method + draw(_optional_cfws) + "=" + draw(_optional_cfws) + result
        if reason is not None:
            text += draw(_required_cfws) + "reason" + draw(_optional_cfws) + "="
            text += draw(_optional_cfws) + draw(_written_value(reason))
        for name, value in properties:
            text += draw(_required_cfws) + name + draw(_optional_cfws) + "="
            text += draw(_optional_cfws) + draw(_written_value(value))
        infos.append(ResInfo(method, result, reason or "", tuple(properties)))
    if not infos:
        text += draw(_optional_cfws) + ";" + draw(_optional_cfws) + "none"
    text += draw(_optional_cfws)
    return text, AuthResults(authserv_id=authserv_id, version=version, results=tuple(infos))


@given(fields())
@example(
    (
        ' mx (c) 1 ;\r\n\tdkim = pass (a (b; c=d)) reason="x; y" header . d = x.ru',
        AuthResults("mx", "1", (ResInfo("dkim", "pass", "x; y", (("header.d", "x.ru"),)),)),
    )
)
def test_a_well_formed_field_reads_back_as_written(case):
    text, expected = case

    assert parse(text) == expected


# -- any text --------------------------------------------------------------------------------

_PIECES = [";", "=", "(", ")", '"', "\\", " ", "\r\n\t", ".", "/", "@", "dkim", "pass", "none"]
_hostile_text = st.one_of(
    st.text(max_size=500),
    st.lists(st.sampled_from(_PIECES) | st.text(max_size=5), max_size=300).map("".join),
    fields()
    .map(lambda case: case[0])
    .flatmap(lambda text: st.builds(lambda cut: text[:cut], st.integers(0, len(text)))),
    st.builds(lambda piece, n: piece * n, st.sampled_from(_PIECES), st.integers(1, 3000)),
)


@given(_hostile_text)
@example("(" * MAX_FIELD_BYTES)
@example(" mx;" + " dkim=none;" * (MAX_RESULTS + 3))
def test_any_text_reads_without_an_exception_into_bounded_values(text):
    parsed = parse(text)

    assert len(parsed.results) <= MAX_RESULTS
    assert len(parsed.authserv_id) <= MAX_VALUE
    for info in parsed.results:
        assert info.method and info.result
        assert len(info.reason) <= MAX_VALUE
        assert all(len(value) <= MAX_VALUE for _, value in info.properties)
    assert isinstance(parsed.problem, str)
    if len(text) > MAX_FIELD_BYTES:
        assert parsed.problem and not parsed.results


@given(st.one_of(header_blocks(), mutated(header_blocks()), st.binary(max_size=2000)))
def test_any_header_block_gives_a_storable_verdict(block):
    verdict = sender_verdict(block, from_address="prices@supplier.ru", authserv_ids=["mx"])

    for text in (verdict.reason, verdict.authserv_id, verdict.dmarc, verdict.spf, *verdict.dkim):
        assert isinstance(text, str) and "\x00" not in text
        assert "\r" not in text and "\n" not in text
        assert len(text) <= 500
        text.encode("utf-8")


# -- what a sender can add changes nothing ----------------------------------------------------

MX = "mx.buyer.example"
_results = st.lists(
    st.sampled_from(
        [
            "dmarc=pass header.from=supplier.ru",
            "dmarc=pass",
            "dmarc=fail header.from=supplier.ru",
            "dmarc=pass header.from=evil.example",
            "dkim=pass header.d=supplier.ru",
            "dkim=pass header.d=mail.supplier.ru",
            "dkim=pass header.d=evil.example",
            "dkim=fail header.d=supplier.ru",
            "spf=pass smtp.mailfrom=supplier.ru",
        ]
    ),
    max_size=3,
)
_field_values = st.builds(
    lambda authserv_id, results: (
        "; ".join([authserv_id, *results]) if results else f"{authserv_id}; none"
    ),
    st.sampled_from([MX, MX.upper(), "evil.example", "mx.supplier.ru"]),
    _results,
)


def _block(values: list[str]) -> bytes:
    lines = [f"Authentication-Results: {v}" for v in values]
    return ("\r\n".join([*lines, "From: Sales <prices@supplier.ru>"]) + "\r\n\r\n").encode()


def _verdict(values: list[str]):
    return sender_verdict(_block(values), from_address="prices@supplier.ru", authserv_ids=[MX])


@given(st.lists(_field_values, max_size=5), _field_values, st.data())
def test_a_field_below_the_believed_one_or_with_another_id_changes_nothing(values, forged, data):
    before = _verdict(values)
    trusted = [i for i, v in enumerate(values) if v.lower().startswith(MX)]
    if forged.lower().startswith(MX):
        # The sender's field with our server's id lands below our server's own one.
        if not trusted:
            return
        at = data.draw(st.integers(trusted[0] + 1, len(values)))
    else:
        at = data.draw(st.integers(0, len(values)))

    after = _verdict([*values[:at], forged, *values[at:]])

    assert after == before
