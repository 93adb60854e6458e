"""The bank's XML_daily document read, and fetched over real HTTP from a loopback
server: rates per one unit, and every hostile or broken answer refused by its kind."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from devkit.servers.cbr import Answer, daily_xml
from pricing.cbr import (
    MAX_CURRENCIES,
    BadDocument,
    BadStatus,
    Fetcher,
    PlainRefused,
    TimedOut,
    TooLarge,
    Unreachable,
    parse_daily,
)

DEC2 = date(2026, 12, 2)


def test_rates_are_per_one_unit_with_the_documents_date():
    daily = parse_daily(daily_xml(DEC2, {"USD": "78,2284", "JPY": "51,2345"}))

    assert daily.effective == DEC2
    assert daily.rates == {"USD": Decimal("78.2284"), "JPY": Decimal("0.512345")}


def test_a_billion_laughs_document_is_refused_without_expanding():
    body = (
        b'<?xml version="1.0"?><!DOCTYPE ValCurs [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(
            b'<!ENTITY a%d "%s">' % (i, b"&a;" * 10 if i == 0 else b"&a%d;" % (i - 1) * 10)
            for i in range(9)
        )
        + b']><ValCurs Date="02.12.2026">&a8;</ValCurs>'
    )
    with pytest.raises(BadDocument):
        parse_daily(body)


def test_an_external_entity_is_refused():
    body = (
        b'<?xml version="1.0"?><!DOCTYPE ValCurs [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<ValCurs Date="02.12.2026"><Valute><CharCode>USD</CharCode><Nominal>1</Nominal>'
        b"<Value>&x;</Value></Valute></ValCurs>"
    )
    with pytest.raises(BadDocument):
        parse_daily(body)


def test_deep_nesting_is_refused_at_the_formats_depth():
    body = b'<ValCurs Date="02.12.2026"><Valute>' + b"<a>" * 100_000 + b"</a>" * 100_000
    with pytest.raises(BadDocument, match="nesting"):
        parse_daily(body + b"</Valute></ValCurs>")


def test_a_body_over_the_cap_is_refused_before_it_is_parsed():
    with pytest.raises(TooLarge):
        parse_daily(b" " * 1001, max_bytes=1000)


def test_more_currencies_than_any_day_has_are_refused():
    valute = "<Valute><CharCode>{}</CharCode><Nominal>1</Nominal><Value>1,0</Value></Valute>"
    codes = [a + b + c for a in "ABCDEFGHIJ" for b in "ABCDEFGHIJ" for c in "ABCDEFGHIJ"][
        : MAX_CURRENCIES + 1
    ]
    body = '<ValCurs Date="02.12.2026">' + "".join(valute.format(c) for c in codes) + "</ValCurs>"
    with pytest.raises(BadDocument, match="currencies"):
        parse_daily(body.encode())


@pytest.mark.parametrize(
    ("code", "nominal", "value"),
    [
        ("USD", "1", "78.22.84"),
        ("USD", "1", "-78,22"),
        ("USD", "1", "1e400"),
        ("USD", "1", "NaN"),
        ("USD", "1", ""),
        ("USD", "0", "78,2284"),
        ("USD", "1" * 20, "78,2284"),
        ("USD", "1", "9" * 40),
        ("usd", "1", "78,2284"),
        ("US", "1", "78,2284"),
        ("USD", "1", "0,0"),
    ],
)
def test_bad_numbers_and_codes_are_refused(code, nominal, value):
    body = (
        f'<ValCurs Date="02.12.2026"><Valute><CharCode>{code}</CharCode>'
        f"<Nominal>{nominal}</Nominal><Value>{value}</Value></Valute></ValCurs>"
    )
    with pytest.raises(BadDocument):
        parse_daily(body.encode())


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html><body>Service unavailable</body></html>",
        b'<ValCurs Date="2026-12-02"><Valute/></ValCurs>',
        b'<ValCurs Date="02.12.2026"></ValCurs>',
        b'<ValCurs Date="02.12.2026"><Valute><CharCode>USD</CharCode>',
        daily_xml(DEC2, {"USD": "78,2284"}) + daily_xml(DEC2, {"USD": "78,2284"}),
    ],
)
def test_what_is_not_the_document_is_refused(body):
    with pytest.raises(BadDocument):
        parse_daily(body)


def test_the_date_is_asked_for_as_the_bank_wants_it():
    fetcher = Fetcher(url="https://www.cbr.ru/scripts/XML_daily.asp", timeout=1)
    assert fetcher.url_for(DEC2) == "https://www.cbr.ru/scripts/XML_daily.asp?date_req=02/12/2026"
    assert fetcher.url_for(None) == "https://www.cbr.ru/scripts/XML_daily.asp"


def test_plain_http_is_refused_unless_allowed(cbr):
    with pytest.raises(PlainRefused):
        Fetcher(url=cbr.url, timeout=1).fetch(DEC2)
    assert cbr.asked == []


def test_a_days_rates_are_fetched_over_http(cbr):
    cbr.answer(DEC2, Answer(body=daily_xml(DEC2, {"USD": "78,2284", "JPY": "51,2345"})))

    daily = Fetcher(url=cbr.url, timeout=1, allow_plain=True).fetch(DEC2)

    assert daily.rates["JPY"] == Decimal("0.512345")
    assert cbr.asked == ["02/12/2026"]


def test_a_server_error_is_a_bad_status(cbr):
    cbr.answer(DEC2, Answer(status=500, body=b"oops"))
    with pytest.raises(BadStatus) as raised:
        Fetcher(url=cbr.url, timeout=1, allow_plain=True).fetch(DEC2)
    assert raised.value.detail == "500"


def test_an_answer_over_the_cap_is_cut_off(cbr):
    cbr.answer(DEC2, Answer(body=b"<" * 200_000))
    with pytest.raises(TooLarge):
        Fetcher(url=cbr.url, timeout=1, allow_plain=True, max_bytes=100_000).fetch(DEC2)


def test_a_server_that_does_not_answer_times_out(cbr):
    cbr.answer(DEC2, Answer(hang=True))
    with pytest.raises(TimedOut):
        Fetcher(url=cbr.url, timeout=0.3, allow_plain=True).fetch(DEC2)


def test_https_is_verified_and_never_falls_back_to_plain(cbr):
    cbr.answer(DEC2, Answer(body=daily_xml(DEC2, {"USD": "78,2284"})))
    # The loopback server speaks plain HTTP: the TLS handshake fails, and that is all.
    https = cbr.url.replace("http://", "https://")

    with pytest.raises(Unreachable):
        Fetcher(url=https, timeout=1).fetch(DEC2)
    assert cbr.asked == []


def test_a_redirect_is_followed_only_where_the_fetcher_may_connect(cbr):
    cbr.answer(DEC2, Answer(status=302, location="ftp://127.0.0.1/XML_daily.asp"))

    with pytest.raises(PlainRefused):
        Fetcher(url=cbr.url, timeout=1, allow_plain=True).fetch(DEC2)
