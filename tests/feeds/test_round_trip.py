"""A YML feed and a CommerceML offers feed, saved to a file, load back through a real
``manage.py products_load`` into an empty catalogue as the same products."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pricing.models import ProductPrice
from products.models import Product
from tests.integration.support import ROOT, database_url

from .conftest import make_products

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = ("own_code", "name", "brand", "article", "barcodes")


def products_load(path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url(), "LANGUAGE_CODE": "en"}
    return subprocess.run(
        [sys.executable, "manage.py", "products_load", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a liveness bound
    )


def published() -> list[tuple]:
    rows = Product.objects.filter(retired_at__isnull=True, selling_price__price__isnull=False)
    return sorted(rows.values_list(*FIELDS))


def loaded() -> list[tuple]:
    return sorted(Product.objects.filter(retired_at__isnull=True).values_list(*FIELDS))


@pytest.mark.parametrize(
    "format, name", [("yml", "feed.xml"), ("cml", "offers.xml"), ("csv", "prices.csv")]
)
def test_a_feed_loads_back_as_the_same_products(client, make_feed, tmp_path, format, name):
    make_products()
    _feed, token = make_feed(format)
    response = client.get(f"/feeds/{token}/")
    assert response.status_code == 200
    path = tmp_path / name
    path.write_bytes(b"".join(response.streaming_content))
    expected = published()
    assert len(expected) == 3
    ProductPrice.objects.all().delete()
    Product.objects.all().delete()

    done = products_load(path)

    assert done.returncode == 0, done.stdout + done.stderr
    got = loaded()
    # XML drops the control characters it forbids on the way out; CSV keeps them.
    drop = {c: None for c in range(1, 32) if c not in (9, 10, 13)} | {0xFFFE: None}
    clean = [
        (code, name if format == "csv" else name.translate(drop), *rest)
        for code, name, *rest in expected
    ]
    assert [row[0] for row in got] == [row[0] for row in clean]
    for ours, theirs in zip(got, clean, strict=True):
        assert ours[0] == theirs[0]
        # products_load squeezes whitespace in a name as it does for every file.
        assert " ".join(ours[1].split()) == " ".join(theirs[1].split())
        assert ours[2:] == theirs[2:]
