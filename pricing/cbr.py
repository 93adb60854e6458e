"""The Central Bank of Russia's daily rates: its ``XML_daily`` document fetched and read.

The document (windows-1251, decimal comma) is ``<ValCurs Date="DD.MM.YYYY">`` with one
``<Valute>`` per currency: ``CharCode`` (ISO 4217), ``Nominal`` (how many units the
value is for: 100 for the yen) and ``Value`` (roubles for ``Nominal`` units). ``Date``
is the day the rates take effect; asked for a day with no new rates (a weekend, a
holiday, tomorrow before they are set) the bank answers with the last rates set before
it, under their own date.

Django-free: ``pricing.services`` passes the settings in. The answer is untrusted: the
connection verifies TLS and refuses plain HTTP unless allowed (the tests' loopback
server), every read has a timeout and the whole one a deadline, the body is capped
before it is parsed, and the parser refuses a DTD (so no entity expands), nesting
deeper than the format's and more currencies than any day has had.
"""

from __future__ import annotations

import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from io import BytesIO
from typing import Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

# The bank publishes about 55 currencies; a day with more is not its document.
MAX_CURRENCIES = 500
# ValCurs > Valute > field: a deeper element is not the format.
MAX_DEPTH = 3
# A day's document is about 10 kB.
MAX_BYTES = 1_000_000
# Roubles per unit are stored with this many places (IDR: 10000 units for ~50 roubles).
PLACES = Decimal("0.00000001")

_CODE = re.compile(r"[A-Z]{3}")
_NOMINAL = re.compile(r"[1-9][0-9]{0,6}")
_VALUE = re.compile(r"[0-9]{1,9}(?:[,.][0-9]{1,8})?")
_FIELDS = {"CharCode", "Nominal", "Value"}


class RatesError(Exception):
    """The bank's rates could not be had."""

    # A stable code the fetch log stores (pricing.models.RateFetch.Problem).
    code = "unreachable"

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail or (self.__doc__ or "").strip())
        self.detail = detail[:200]


class Unreachable(RatesError):
    """The bank's server could not be reached."""

    code = "unreachable"


class TimedOut(RatesError):
    """The bank's server did not answer in time."""

    code = "timeout"


class BadStatus(RatesError):
    """The bank's server answered with an error status."""

    code = "status"


class TooLarge(RatesError):
    """The answer is larger than a day's rates can be."""

    code = "too_large"


class BadDocument(RatesError):
    """The answer is not the XML_daily document."""

    code = "malformed"


class PlainRefused(RatesError):
    """The URL is not HTTPS, and plain HTTP is not allowed."""

    code = "plain"


@dataclass(frozen=True)
class DailyRates:
    """One answer of the bank: the day its rates take effect and roubles per one unit of
    each currency (Value / Nominal)."""

    effective: date
    rates: dict[str, Decimal]


@dataclass(frozen=True)
class Fetcher:
    """Where and how to ask: the document's URL, each read's timeout (seconds, also the
    whole answer's deadline, twice it), whether plain HTTP may be used."""

    url: str
    timeout: float
    allow_plain: bool = False
    max_bytes: int = MAX_BYTES

    def url_for(self, day: date | None) -> str:
        """The URL with ``date_req=DD/MM/YYYY`` for ``day`` (none: the bank's latest)."""
        if day is None:
            return self.url
        parts = urllib.parse.urlsplit(self.url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        query = [(k, v) for k, v in query if k != "date_req"]
        query.append(("date_req", day.strftime("%d/%m/%Y")))
        return urllib.parse.urlunsplit(
            parts._replace(query=urllib.parse.urlencode(query, safe="/"))
        )

    def fetch(self, day: date | None) -> DailyRates:
        """The bank's rates for ``day``; RatesError (a subclass) when there are none."""
        return parse_daily(self.download(day), max_bytes=self.max_bytes)

    def download(self, day: date | None) -> bytes:
        url = self.url_for(day)
        self._check_scheme(url)
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=ssl.create_default_context()),
            _Redirects(self),
        )
        request = urllib.request.Request(url, headers={"User-Agent": "pricefeed"})
        deadline = time.monotonic() + 2 * self.timeout
        try:
            with opener.open(request, timeout=self.timeout) as response:
                chunks: list[bytes] = []
                size = 0
                while chunk := response.read(65536):
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise TooLarge(f"> {self.max_bytes}")
                    if time.monotonic() > deadline:
                        raise TimedOut()
                    chunks.append(chunk)
                return b"".join(chunks)
        except urllib.error.HTTPError as error:
            error.close()
            raise BadStatus(str(error.code)) from None
        except TimeoutError:
            raise TimedOut() from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise TimedOut() from None
            raise Unreachable(str(error.reason)) from None
        except (OSError, ValueError) as error:  # reset, refused, a broken chunked body
            raise Unreachable(str(error)) from None

    def _check_scheme(self, url: str) -> None:
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme == "https" or (scheme == "http" and self.allow_plain):
            return
        raise PlainRefused(scheme)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only where the fetcher may connect (never HTTPS to HTTP)."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str):
        try:
            self.fetcher._check_scheme(newurl)
        except PlainRefused:
            fp.close()
            raise
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def parse_daily(body: bytes, *, max_bytes: int = MAX_BYTES) -> DailyRates:
    """Reads an ``XML_daily`` document; BadDocument (or TooLarge) when it is not one."""
    if len(body) > max_bytes:
        raise TooLarge(f"> {max_bytes}")
    effective: date | None = None
    rates: dict[str, Decimal] = {}
    fields: dict[str, str] = {}
    depth = 0
    try:
        for event, element in iterparse(BytesIO(body), events=("start", "end"), forbid_dtd=True):
            if event == "start":
                depth += 1
                if depth > MAX_DEPTH:
                    raise BadDocument("nesting")
                if depth == 1:
                    if element.tag != "ValCurs":
                        raise BadDocument("root")
                    effective = _day(element.get("Date", ""))
                continue
            depth -= 1
            if depth == 2 and element.tag in _FIELDS:
                fields[element.tag] = (element.text or "").strip()
            elif depth == 1 and element.tag == "Valute":
                code, rate = _rate(fields)
                if code in rates:
                    raise BadDocument(f"{code} twice")
                rates[code] = rate
                if len(rates) > MAX_CURRENCIES:
                    raise BadDocument("currencies")
                fields = {}
                element.clear()
    except DefusedXmlException:
        raise BadDocument("DTD") from None
    except SyntaxError as error:  # ParseError
        raise BadDocument(str(error)[:200]) from None
    if effective is None or not rates:
        raise BadDocument("no rates")
    return DailyRates(effective=effective, rates=rates)


def _day(text: str) -> date:
    try:
        return datetime.strptime(text, "%d.%m.%Y").date()
    except ValueError:
        raise BadDocument(f"Date {text[:20]!r}") from None


def _rate(fields: dict[str, str]) -> tuple[str, Decimal]:
    code = fields.get("CharCode", "")
    nominal = fields.get("Nominal", "")
    value = fields.get("Value", "")
    if not _CODE.fullmatch(code):
        raise BadDocument(f"CharCode {code[:20]!r}")
    if not _NOMINAL.fullmatch(nominal):
        raise BadDocument(f"{code} Nominal {nominal[:20]!r}")
    if not _VALUE.fullmatch(value):
        raise BadDocument(f"{code} Value {value[:20]!r}")
    rate = (Decimal(value.replace(",", ".")) / Decimal(nominal)).quantize(PLACES)
    if rate <= 0:
        raise BadDocument(f"{code} Value {value!r}")
    return code, rate
