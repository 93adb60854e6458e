"""A throwaway HTTP server on loopback that answers as the Bank of Russia's XML_daily
does: windows-1251, decimal comma, the date asked for in ``date_req``. Written from the
format's description. The answers per date are a test's to set; the demo answers every
date (``every_day``) with made-up rates that move a little from day to day."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

VALUTE = (
    '<Valute ID="{id}"><NumCode>{num}</NumCode><CharCode>{code}</CharCode>'
    "<Nominal>{nominal}</Nominal><Name>{name}</Name><Value>{value}</Value>"
    "<VunitRate>{unit}</VunitRate></Valute>"
)
CURRENCIES = {
    # code: (ID, NumCode, Nominal, Name)
    "USD": ("R01235", "840", 1, "Доллар США"),
    "EUR": ("R01239", "978", 1, "Евро"),
    "JPY": ("R01820", "392", 100, "Японских иен"),
    "CNY": ("R01375", "156", 1, "Китайский юань"),
}


def daily_xml(effective: date, values: dict[str, str]) -> bytes:
    """A day's document: ``values`` are Values as the bank writes them ("78,2284"), for
    the currency's Nominal."""
    rows = []
    for code, value in values.items():
        id_, num, nominal, name = CURRENCIES[code]
        unit = str(round(float(value.replace(",", ".")) / nominal, 6)).replace(".", ",")
        rows.append(
            VALUTE.format(
                id=id_, num=num, code=code, nominal=nominal, name=name, value=value, unit=unit
            )
        )
    text = (
        '<?xml version="1.0" encoding="windows-1251"?>'
        f'<ValCurs Date="{effective:%d.%m.%Y}" name="Foreign Currency Market">'
        + "".join(rows)
        + "</ValCurs>"
    )
    return text.encode("cp1251")


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    # Held until the test ends (a server that does not answer in time).
    hang: bool = False
    # A redirect's target (with a 3xx status).
    location: str = ""


def demo_day(day: date) -> Answer:
    """A made-up day of the bank's: the four currencies, values that move with the date."""
    wobble = (day.toordinal() % 7) / 100
    values = {"USD": 78.23, "EUR": 91.47, "JPY": 51.62, "CNY": 10.94}
    return Answer(
        body=daily_xml(
            day, {code: f"{value + wobble:.4f}".replace(".", ",") for code, value in values.items()}
        )
    )


@dataclass
class CbrServer:
    """Answers by the ``date_req`` asked ("DD/MM/YYYY"; "" for none); ``asked`` lists them.
    A date with no answer set gets ``every_day``'s for it when there is one, else 404."""

    answers: dict[str, Answer] = field(default_factory=dict)
    every_day: Callable[[date], Answer] | None = None
    asked: list[str] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def answer(self, day: date | None, answer: Answer) -> None:
        self.answers["" if day is None else f"{day:%d/%m/%Y}"] = answer


def _every_day(state: CbrServer, asked: str) -> Answer:
    if state.every_day is None:
        return Answer(status=404)
    try:
        day = datetime.strptime(asked, "%d/%m/%Y").date() if asked else date.today()
    except ValueError:
        return Answer(status=400)
    return state.every_day(day)


def start(server_state: CbrServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            query = parse_qs(urlsplit(self.path).query)
            asked = query.get("date_req", [""])[0]
            server_state.asked.append(asked)
            answer = server_state.answers.get(asked) or _every_day(server_state, asked)
            if answer.hang:
                server_state.released.wait(30)
                return
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/xml; charset=windows-1251")
            self.send_header("Content-Length", str(len(answer.body)))
            if answer.location:
                self.send_header("Location", answer.location)
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}/scripts/XML_daily.asp"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd
