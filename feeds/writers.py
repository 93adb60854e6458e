"""The feeds' files, streamed: the head written here, the rows by PostgreSQL
(feeds.sql), relayed from ``COPY ... TO STDOUT`` in blocks of ``BLOCK`` bytes."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import IO
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection

from pricing.models import PublishedVersion

from . import sql
from .models import CustomerGroup, Feed
from .sql import xml_escape

BLOCK = 1 << 16
MOSCOW = ZoneInfo("Europe/Moscow")
NO_CATEGORY = "Без категории"
CSV_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Version:
    number: int
    changed_at: datetime


def published_version() -> Version:
    row = PublishedVersion.objects.filter(pk=1).values_list("number", "changed_at").first()
    if row is None:
        return Version(0, datetime(2000, 1, 1, tzinfo=MOSCOW))
    return Version(row[0], row[1])


def percent_of(group: CustomerGroup | None) -> str | None:
    if group is None or group.adjustment_percent == 0:
        return None
    return str(Decimal(group.adjustment_percent))


def copy_out(statement: str) -> Iterator[bytes]:
    """The output of ``statement`` (a COPY ... TO STDOUT) in blocks of about BLOCK bytes."""
    connection.ensure_connection()
    pg = connection.connection
    buffer = bytearray()
    with pg.cursor() as cursor, cursor.copy(statement) as copy:
        for data in copy:
            buffer += data
            if len(buffer) >= BLOCK:
                yield bytes(buffer)
                buffer.clear()
    if buffer:
        yield bytes(buffer)


def copy_xml_rows(select: str) -> str:
    return f"COPY ({select}) TO STDOUT"


def category_ids(paths: list[str]) -> dict[str, int]:
    """The ids of category paths in a YML feed (feeds.sql.category_id_sql)."""
    if not paths:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT path, {sql.category_id_sql('path')} FROM unnest(%s::text[]) path", [paths]
        )
        return dict(cursor.fetchall())


def yml_categories(paths: list[str]) -> list[tuple[int, int | None, str]]:
    """Every level of every category path as (id, parent id, name), parents first."""
    levels_of: dict[str, tuple[str | None, str]] = {}  # path -> (parent path, name)
    for path in paths:
        levels = path.split(" / ") if path else [NO_CATEGORY]
        for depth in range(1, len(levels) + 1):
            key = " / ".join(levels[:depth])
            parent = " / ".join(levels[: depth - 1]) if depth > 1 else None
            levels_of.setdefault(key, (parent, levels[depth - 1]))
    ids = category_ids(list(levels_of))
    found = [
        (ids[key], ids[parent] if parent is not None else None, name)
        for key, (parent, name) in levels_of.items()
    ]
    return sorted(found, key=lambda c: (c[1] is not None, c[0]))


def _published_categories() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(sql.categories())
        return sorted(row[0] for row in cursor.fetchall())


def yml(feed: Feed, version: Version) -> Iterator[bytes]:
    moment = version.changed_at.astimezone(MOSCOW).strftime("%Y-%m-%dT%H:%M%z")
    moment = moment[:-2] + ":" + moment[-2:]
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f'<yml_catalog date="{moment}">\n<shop>\n',
        f"<name>{xml_escape(feed.shop_name or feed.name)}</name>\n",
        f"<company>{xml_escape(feed.company or feed.shop_name or feed.name)}</company>\n",
        f"<url>{xml_escape(feed.shop_url or settings.PRICEFEED_PUBLIC_URL or 'http://localhost/')}"
        "</url>\n",
        '<currencies>\n<currency id="RUR" rate="1"/>\n</currencies>\n<categories>\n',
    ]
    for cid, parent, name in yml_categories(_published_categories()):
        parent_attr = f' parentId="{parent}"' if parent is not None else ""
        head.append(f'<category id="{cid}"{parent_attr}>{xml_escape(name)}</category>\n')
    head.append("</categories>\n<offers>\n")
    yield "".join(head).encode()
    yield from copy_out(copy_xml_rows(sql.yml_offers(percent_of(feed.customer_group), NO_CATEGORY)))
    yield b"</offers>\n</shop>\n</yml_catalog>\n"


def cml_ids(feed: Feed) -> dict[str, str]:
    """The package's identifiers, stable per feed."""
    base = f"pricefeed-feed-{feed.pk}"
    return {
        "package": base + "#",
        "catalogue": "pricefeed-catalogue",
        "classifier": "pricefeed-classifier",
        "price_type": f"{base}-price",
    }


def cml(feed: Feed, version: Version) -> Iterator[bytes]:
    ids = cml_ids(feed)
    moment = version.changed_at.astimezone(MOSCOW).strftime("%Y-%m-%dT%H:%M:%S")
    name = xml_escape(feed.name)
    yield (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<КоммерческаяИнформация ВерсияСхемы="2.08" ДатаФормирования="{moment}">\n'
        '<ПакетПредложений СодержитТолькоИзменения="false">\n'
        f"<Ид>{ids['package']}</Ид>\n<Наименование>{name}</Наименование>\n"
        f"<ИдКаталога>{ids['catalogue']}</ИдКаталога>\n"
        f"<ИдКлассификатора>{ids['classifier']}</ИдКлассификатора>\n"
        f"<ТипыЦен>\n<ТипЦены><Ид>{ids['price_type']}</Ид><Наименование>{name}"
        "</Наименование><Валюта>RUB</Валюта></ТипЦены>\n</ТипыЦен>\n<Предложения>\n"
    ).encode()
    yield from copy_out(
        copy_xml_rows(sql.cml_offers(percent_of(feed.customer_group), ids["price_type"]))
    )
    yield "</Предложения>\n</ПакетПредложений>\n</КоммерческаяИнформация>\n".encode()


def csv(percent: str | None) -> Iterator[bytes]:
    # With a BOM: Excel (the usual reader of a CSV price list here) reads UTF-8 only
    # then; products_load and most tools skip it.
    yield CSV_BOM + (sql.CSV_HEADER + "\n").encode()
    yield from copy_out(sql.csv_rows(percent))


def xlsx(percent: str | None, max_rows: int) -> tuple[IO[bytes], int]:
    """The xlsx of the published prices, written (openpyxl's write-only mode, rows from
    a server-side cursor) into a temporary file: the file, rewound, and its rows. At
    most ``max_rows`` products (Excel's sheet holds 1,048,576 rows)."""
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("prices")
    sheet.append(sql.CSV_HEADER.split(";"))
    rows = 0
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql.table_rows(percent) + f" LIMIT {int(max_rows)}")
        while batch := cursor.fetchmany(2000):
            for row in batch:
                sheet.append(
                    [
                        *(_cell(value) for value in row[:7]),
                        row[7],
                        1 if row[8] else 0,
                        row[9],
                    ]
                )
            rows += len(batch)
    out = tempfile.TemporaryFile()
    workbook.save(out)
    out.seek(0)
    return out, rows


def _cell(text: str) -> str:
    # openpyxl refuses the control characters XML forbids: they are dropped, as in XML.
    return text.translate(_DROP)


_DROP = {ord(c): None for c in sql.FORBIDDEN}


def file_chunks(out: IO[bytes]) -> Iterator[bytes]:
    try:
        while block := out.read(BLOCK):
            yield block
    finally:
        out.close()
