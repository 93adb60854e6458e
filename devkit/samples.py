"""Sample supplier e-mails with price-list attachments, for the demo and benchmarks."""

from __future__ import annotations

import io
import itertools
import random
import uuid
import zipfile
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from email.message import EmailMessage
from email.utils import format_datetime

CONTENT_TYPES = {
    ".csv": ("text", "csv"),
    ".xlsx": ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ".zip": ("application", "zip"),
    ".pdf": ("application", "pdf"),
}

PRODUCTS = [
    ("Болт М8х40 оцинк.", Decimal("4.20")),
    ("Гайка М8 DIN 934", Decimal("1.15")),
    ("Шайба 8 плоская", Decimal("0.60")),
    ("Саморез 4,2х32", Decimal("0.85")),
    ("Анкер-клин 10х100", Decimal("27.90")),
    ("Дюбель 6х40", Decimal("0.95")),
    ("Шуруп 5х60 желт.", Decimal("2.40")),
    ("Хомут 12-22 мм", Decimal("18.50")),
]


def price_rows(count: int, seed: int = 0) -> list[tuple[str, str, Decimal, int]]:
    rnd = random.Random(seed)
    rows = []
    for i in range(count):
        name, base = PRODUCTS[i % len(PRODUCTS)]
        price = (base * Decimal(rnd.uniform(0.9, 1.2))).quantize(Decimal("0.01"))
        rows.append((f"A-{1000 + i}", name, price, rnd.randint(0, 5000)))
    return rows


def price_list_csv(rows: Iterable[tuple], *, encoding: str = "cp1251") -> bytes:
    """A Russian-style CSV: a title row, ``;`` delimiter, ``1 234,50`` prices."""
    lines = ["Прайс-лист ООО «Поставщик»;;;", "Артикул;Наименование;Цена, руб.;Остаток"]
    for sku, name, price, qty in rows:
        whole, frac = f"{price:.2f}".split(".")
        pretty = f"{int(whole):,}".replace(",", " ") + "," + frac
        lines.append(f"{sku};{name};{pretty};{qty}")
    return ("\r\n".join(lines) + "\r\n").encode(encoding)


def price_list_xlsx(rows: Iterable[tuple]) -> bytes:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Прайс")
    sheet.append(["Price list", None, None, None])
    sheet.append(["SKU", "Name", "Price", "Qty"])
    for sku, name, price, qty in rows:
        sheet.append([sku, name, float(price), qty])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def supplier_email(
    *,
    subject: str = "Price list",
    sender: str = "Sales <sales@acme.test>",
    to: str = "prices@buyer.test",
    attachments: Iterable[tuple[str, bytes]] = (),
    message_id: str | None = "auto",
    date: datetime | None = None,
    body: str = "Please find our price list attached.",
) -> bytes:
    """A well-formed message; ``message_id="auto"`` makes a unique one, None omits it."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(date or datetime.now(UTC))
    if message_id == "auto":
        domain = sender.rsplit("@", 1)[-1].strip(">") or "example.test"
        message_id = f"<{uuid.uuid4().hex}@{domain}>"
    if message_id:
        msg["Message-ID"] = message_id
    msg.set_content(body)
    for filename, payload in attachments:
        suffix = filename[filename.rfind(".") :].lower() if "." in filename else ""
        maintype, subtype = CONTENT_TYPES.get(suffix, ("application", "octet-stream"))
        msg.add_attachment(payload, maintype=maintype, subtype=subtype, filename=filename)
    return msg.as_bytes()


# The demo's configs and a stream of mail that exercises them.
DEMO_CONFIGS = [
    {
        "name": "Поставщик — прайс CSV",
        "sender_pattern": "*@postavshik.example",
        "subject_pattern": "re:прайс",
        "filename_pattern": "*.csv",
    },
    {
        "name": "ACME wholesale (xlsx)",
        "sender_pattern": "*@acme.example",
        "filename_pattern": "price*.xlsx",
    },
    {
        "name": "ACME stock (zipped)",
        "sender_pattern": "*@acme.example",
        "subject_pattern": "*stock*",
        "filename_pattern": "*.zip",
    },
]


def price_list_xlsx_with_bad_rows(rows: Iterable[tuple], bad: dict[int, object]) -> bytes:
    """price_list_xlsx's sheet with the price of the rows at the indexes in ``bad``
    replaced (``{3: "по запросу"}``): those rows fail, the others go in."""
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Прайс")
    sheet.append(["Price list", None, None, None])
    sheet.append(["SKU", "Name", "Price", "Qty"])
    for i, (sku, name, price, qty) in enumerate(rows):
        sheet.append([sku, name, bad.get(i, float(price)), qty])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def not_a_price_list_csv() -> bytes:
    """A supplier's wrong attachment, named like its price list: a reconciliation
    statement with no price-list header anywhere (the import FAILS: no header row)."""
    lines = [
        "Акт сверки взаимных расчётов за май;;",
        "ООО «Поставщик» — ООО «Покупатель»;;",
        "Дата;Документ;Сумма",
        "05.05;Реализация № 118;12 500,00",
        "19.05;Оплата, п/п № 431;-12 500,00",
        "Сальдо на конец периода;;0,00",
    ]
    return ("\r\n".join(lines) + "\r\n").encode("cp1251")


# The demo's stream goes round these kinds of e-mail; the first round has every one.
DEMO_KINDS = 6


def demo_stream() -> Iterator[tuple[str, bytes]]:
    """Endless (description, raw message) pairs for the demo: mostly good price lists,
    and in every round of DEMO_KINDS e-mails some trouble an operator should see: a
    PARTIAL import (two rows without a price), a FAILED one (the wrong file, or a
    damaged workbook), and a message that matches no config (IGNORED)."""
    for n in itertools.count(1):
        rows = price_rows(20 + n % 7, seed=n)
        kind = n % DEMO_KINDS
        if kind == 1:
            yield (
                "CSV price list (cp1251) from Поставщик",
                supplier_email(
                    subject=f"Прайс-лист №{n}",
                    sender="Отдел продаж <sales@postavshik.example>",
                    attachments=[(f"prais_{n}.csv", price_list_csv(rows))],
                ),
            )
        elif kind == 2:
            yield (
                "xlsx price list from ACME with two rows without a price (PARTIAL)",
                supplier_email(
                    subject=f"Price list {n}",
                    sender="ACME Sales <sales@acme.example>",
                    attachments=[
                        (
                            f"price_{n}.xlsx",
                            price_list_xlsx_with_bad_rows(rows, {3: "по запросу", 11: "call us"}),
                        )
                    ],
                ),
            )
        elif kind == 3:
            yield (
                "newsletter that matches no config (IGNORED)",
                supplier_email(
                    subject="Our autumn catalogue",
                    sender="news@unknown.example",
                    attachments=[("catalogue.pdf", b"%PDF-1.4 demo")],
                ),
            )
        elif kind == 4 and n % (2 * DEMO_KINDS) == 4:
            yield (
                "Поставщик sends the wrong file as its price list (FAILED)",
                supplier_email(
                    subject=f"Прайс-лист №{n}",
                    sender="Отдел продаж <sales@postavshik.example>",
                    attachments=[(f"prais_{n}.csv", not_a_price_list_csv())],
                ),
            )
        elif kind == 4:
            workbook = price_list_xlsx(rows)
            yield (
                "a damaged xlsx price list from ACME (FAILED)",
                supplier_email(
                    subject=f"Price list {n}",
                    sender="ACME Sales <sales@acme.example>",
                    attachments=[(f"price_{n}.xlsx", workbook[: len(workbook) // 2])],
                ),
            )
        elif kind == 5:
            yield (
                "xlsx price list + zipped stock from ACME",
                supplier_email(
                    subject=f"Weekly price and stock update #{n}",
                    sender="ACME Sales <sales@acme.example>",
                    attachments=[
                        (f"price_{n}.xlsx", price_list_xlsx(rows)),
                        (f"stock_{n}.zip", zipped({f"stock/stock_{n}.csv": price_list_csv(rows)})),
                    ],
                ),
            )
        else:
            yield (
                "xlsx price list from ACME",
                supplier_email(
                    subject=f"Price list {n}",
                    sender="ACME Sales <sales@acme.example>",
                    attachments=[(f"price_{n}.xlsx", price_list_xlsx(rows))],
                ),
            )
