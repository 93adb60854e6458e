"""The feeds at /feeds/<token>/: each format's content (hostile names escaped), the
schemas, conditional requests, tokens, streaming."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.http import StreamingHttpResponse
from django.utils.http import http_date
from lxml import etree
from openpyxl import load_workbook

from feeds import writers
from feeds.models import CustomerGroup, Feed
from feeds.tokens import feed_token_renew, token_hash
from pricing.models import PublishedVersion
from products.models import Product

from .conftest import HOSTILE_CLEAN

SCHEMAS = Path(__file__).resolve().parents[2] / "feeds" / "schemas"
YML_DTD = etree.DTD(str(SCHEMAS / "yml.dtd"))
CML_XSD = etree.XMLSchema(etree.parse(str(SCHEMAS / "commerceml_offers.xsd")))

pytestmark = pytest.mark.django_db


def body(response) -> bytes:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content)


def get(client, token: str, **headers):
    return client.get(f"/feeds/{token}/", headers=headers)


def test_the_yml_feed_is_valid_against_the_dtd_and_carries_hostile_names_intact(
    client, catalogue, make_feed
):
    _feed, token = make_feed(
        "yml", shop_name="Магазин & Co", company="ООО «Крепёж»", shop_url="https://shop.example/"
    )
    response = get(client, token)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    root = etree.fromstring(body(response))
    assert YML_DTD.validate(root), YML_DTD.error_log
    shop = root.find("shop")
    assert shop.findtext("name") == "Магазин & Co"
    assert shop.findtext("company") == "ООО «Крепёж»"
    offers = {o.get("id"): o for o in shop.iter("offer")}
    assert sorted(offers) == ["A-1", "A-2", "A-3"]  # not the retired one, nor the unpriced
    first = offers["A-1"]
    assert first.get("available") == "true"
    assert first.findtext("name") == HOSTILE_CLEAN
    assert first.findtext("vendor") == "Bosch & Co <pro>"
    assert first.findtext("vendorCode") == "ART-1"
    assert first.findtext("price") == "123.45"
    assert first.findtext("currencyId") == "RUR"
    assert [b.text for b in first.findall("barcode")] == ["4600000000008", "4600000000015"]
    assert offers["A-2"].get("available") == "false"
    assert offers["A-2"].find("vendor") is None
    categories = {c.get("id"): (c.text, c.get("parentId")) for c in shop.iter("category")}
    bolts = categories[first.findtext("categoryId")]
    assert bolts[0] == "Болты"
    assert categories[bolts[1]] == ("Крепёж", None)
    assert categories[offers["A-2"].findtext("categoryId")] == (writers.NO_CATEGORY, None)


def test_category_ids_are_the_same_in_every_run(client, catalogue, make_feed):
    _feed, token = make_feed("yml")
    first = etree.fromstring(body(get(client, token)))
    second = etree.fromstring(body(get(client, token)))
    ids = [c.get("id") for c in first.iter("category")]
    assert ids == [c.get("id") for c in second.iter("category")]
    assert str(writers.category_ids(["Крепёж / Болты"])["Крепёж / Болты"]) in ids


def test_the_commerceml_offers_are_valid_against_the_xsd(client, catalogue, make_feed):
    _feed, token = make_feed("cml")
    response = get(client, token)
    root = etree.fromstring(body(response))
    assert CML_XSD.validate(root), CML_XSD.error_log
    assert root.get("ВерсияСхемы") == "2.08"
    package = root.find("ПакетПредложений")
    price_type = package.find("ТипыЦен/ТипЦены/Ид").text
    offers = {o.findtext("Ид"): o for o in package.iter("Предложение")}
    assert sorted(offers) == ["A-1", "A-2", "A-3"]
    first = offers["A-1"]
    assert first.findtext("Наименование") == HOSTILE_CLEAN
    assert first.findtext("Штрихкод") == "4600000000008"
    assert first.findtext("Изготовитель/Наименование") == "Bosch & Co <pro>"
    assert first.findtext("ЗначенияРеквизитов/ЗначениеРеквизита/Значение") == "4600000000015"
    price = first.find("Цены/Цена")
    assert price.findtext("ИдТипаЦены") == price_type
    assert price.findtext("ЦенаЗаЕдиницу") == "123.45"
    assert price.findtext("Валюта") == "RUB"
    assert price.findtext("Единица") == "шт"
    assert first.findtext("Количество") == "7"
    assert offers["A-2"].findtext("Количество") == "0"
    assert offers["A-3"].findtext("Количество") == "2.5"


def test_the_csv_has_a_bom_the_header_and_every_published_product(client, catalogue, make_feed):
    _feed, token = make_feed("csv")
    response = get(client, token)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="prices.csv"' in response["Content-Disposition"]
    data = body(response)
    assert data.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(data[3:].decode()), delimiter=";"))
    assert rows[0] == [
        "own_code",
        "name",
        "brand",
        "article",
        "barcode",
        "unit",
        "category",
        "price",
        "available",
        "quantity",
    ]
    by_code = {row[0]: row for row in rows[1:]}
    assert sorted(by_code) == ["A-1", "A-2", "A-3"]
    # CSV keeps every character (it is not XML): quoted where needed.
    assert by_code["A-1"][1].startswith('Болт <M8> & "гайка"')
    assert by_code["A-1"][4] == "4600000000008|4600000000015"
    assert by_code["A-1"][7:] == ["123.45", "1", "7"]
    assert by_code["A-2"][7:] == ["10.00", "0", ""]


def test_the_xlsx_holds_every_published_product(client, catalogue, make_feed):
    _feed, token = make_feed("xlsx")
    response = get(client, token)
    assert response["Content-Type"].startswith("application/vnd.openxmlformats")
    sheet = load_workbook(io.BytesIO(body(response)), read_only=True).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][0] == "own_code"
    by_code = {row[0]: row for row in rows[1:]}
    assert sorted(by_code) == ["A-1", "A-2", "A-3"]
    assert by_code["A-1"][1] == HOSTILE_CLEAN
    assert Decimal(str(by_code["A-3"][7])) == Decimal("0.99")


def test_a_customer_groups_adjustment_applies_rounded_to_kopecks(client, catalogue, make_feed):
    group = CustomerGroup.objects.create(
        name="Опт",
        adjustment_percent=Decimal("-5"),
        recipients="a@example.com",
        time="09:00",
    )
    _feed, token = make_feed("yml", customer_group=group)
    root = etree.fromstring(body(get(client, token)))
    prices = {o.get("id"): o.findtext("price") for o in root.iter("offer")}
    # 123.45 × 0.95 = 117.2775; 10 × 0.95; 0.99 × 0.95 = 0.9405
    assert prices == {"A-1": "117.28", "A-2": "9.50", "A-3": "0.94"}


def test_an_unchanged_feed_is_answered_304_and_a_new_version_is_not(client, catalogue, make_feed):
    _feed, token = make_feed("yml")
    first = get(client, token)
    body(first)
    etag, modified = first["ETag"], first["Last-Modified"]
    assert get(client, token, if_none_match=etag).status_code == 304
    assert get(client, token, if_modified_since=modified).status_code == 304
    PublishedVersion.objects.filter(pk=1).update(number=6)
    again = get(client, token, if_none_match=etag)
    assert again.status_code == 200
    assert again["ETag"] != etag


def test_a_change_of_the_feeds_settings_changes_its_etag(client, catalogue, make_feed):
    feed, token = make_feed("yml")
    etag = get(client, token)["ETag"]
    feed.shop_name = "Другой"
    feed.save()
    assert get(client, token, if_none_match=etag).status_code == 200


def test_a_renamed_product_changes_the_etag(client, catalogue, make_feed):
    _feed, token = make_feed("yml")
    etag = get(client, token)["ETag"]
    assert get(client, token, if_none_match=etag).status_code == 304
    Product.objects.filter(own_code="A-1").update(name="Болт М8х40 (новая упаковка)")
    renamed = get(client, token, if_none_match=etag)
    assert renamed.status_code == 200
    assert "новая упаковка" in body(renamed).decode()


def test_unknown_switched_off_and_renewed_tokens_are_the_same_404(client, catalogue, make_feed):
    feed, token = make_feed("yml")
    unknown = get(client, "x" * 43)
    assert unknown.status_code == 404
    _off, off_token = make_feed("csv", name="выключен", enabled=False)
    off = get(client, off_token)
    assert off.status_code == 404
    assert off.content == unknown.content
    new = feed_token_renew(feed)
    assert get(client, token).status_code == 404
    assert get(client, new).status_code == 200


def test_the_token_is_stored_only_as_its_sha256(catalogue, make_feed):
    feed, token = make_feed("yml")
    feed.refresh_from_db()
    assert feed.token_hash == token_hash(token)
    assert token not in str(Feed.objects.filter(pk=feed.pk).values().get())
    assert len(token) >= 43


def test_the_rows_stream_from_copy_in_blocks(client, catalogue, make_feed, monkeypatch):
    statements = []
    real = writers.copy_out

    def recording(statement):
        statements.append(statement)
        return real(statement)

    monkeypatch.setattr(writers, "copy_out", recording)
    monkeypatch.setattr(writers, "BLOCK", 100)
    _feed, token = make_feed("yml")
    response = get(client, token)
    assert response.streaming
    assert statements == []  # nothing read before the body is
    chunks = list(response.streaming_content)
    assert len(statements) == 1 and statements[0].lstrip().startswith("COPY (")
    assert len(chunks) > 3  # the rows came in blocks, not as one whole


def test_head_gets_the_headers_without_a_body(client, catalogue, make_feed):
    _feed, token = make_feed("yml")
    response = client.head(f"/feeds/{token}/")
    assert response.status_code == 200
    assert response["ETag"]
    _feed.refresh_from_db()
    moment = max(PublishedVersion.objects.get().changed_at, _feed.updated_at)
    assert response["Last-Modified"] == http_date(int(moment.timestamp()))
    assert b"".join(response.streaming_content) == b""


def test_a_feed_closed_mid_rows_leaves_the_connection_usable(catalogue, make_feed, monkeypatch):
    """What a server does when the client goes away: it closes the body's iterator while
    the rows' COPY is under way; the COPY is cancelled and the connection serves the next
    query."""
    from django.db import connection

    monkeypatch.setattr(writers, "BLOCK", 100)
    feed, _token = make_feed("yml")
    body = writers.yml(feed, writers.published_version())
    next(body)  # the head
    next(body)  # the first block of rows
    body.close()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM products_product")
        assert cursor.fetchone() == (5,)
