"""Supplier text inside stored reasons is bounded (issue #30: one 128 KiB price cell,
stored whole in its row error, took the imports list 52.7 s and the import's mail 86.7 s
of CPU). The row error quotes the cell cut to 200 characters, so what is stored, and
every page and mail made from it, is the same size whether the cell is 32 KiB or four
times that: their cost cannot grow with the cell."""

from __future__ import annotations

import json

import pytest

from devkit.hostile import BIG_CELL
from notifications.services import render_outcome
from pricefeed.models import PriceImport
from tests.factories import create_config, receive, run_all

pytestmark = pytest.mark.django_db

# n and 4n, the larger the 128 KiB (csv's own field limit: a longer cell makes
# the whole file unreadable, with no row error to quote it).
SIZES = (BIG_CELL // 4, BIG_CELL)
CELL_RUN = "по запросу " * 30  # 330 characters of the cell: more than any cut keeps


def price_list(size: int) -> bytes:
    cell = ("по запросу " * (size // 11 + 1))[:size]
    return ("sku;price\r\nA-1;" + cell + "\r\n").encode("utf-8")


def sizes_made_from_an_import_with_a_cell_of(size: int, mailbox, admin_client) -> dict:
    PriceImport.objects.all().delete()  # the list shows this import alone
    (price_import,) = run_all(receive(mailbox, [("price.csv", price_list(size))]))
    assert price_import.status == PriceImport.Status.FAILED
    pages = {
        "list": admin_client.get("/admin/pricefeed/priceimport/", HTTP_ACCEPT_LANGUAGE="ru"),
        "page": admin_client.get(
            f"/admin/pricefeed/priceimport/{price_import.pk}/change/", HTTP_ACCEPT_LANGUAGE="ru"
        ),
    }
    _subject, text, html = render_outcome(price_import, "ru")
    made = {name: page.content.decode() for name, page in pages.items()}
    made |= {"mail text": text, "mail html": html}
    for name, content in made.items():
        assert CELL_RUN not in content, name
    assert "не число" in made["page"] and "не число" in made["mail text"]
    (row_error,) = price_import.errors
    return {
        "stored": len(json.dumps(row_error, ensure_ascii=False)),
        "quoted": len(row_error["error"]["params"]["value"]),
        **{name: len(content) for name, content in made.items()},
    }


def test_a_huge_price_cell_is_stored_cut_and_every_page_and_mail_stays_the_same_size(
    mailbox, admin_client
):
    create_config(mailbox, filename_pattern="*.csv")

    small, large = (
        sizes_made_from_an_import_with_a_cell_of(n, mailbox, admin_client) for n in SIZES
    )

    assert small["quoted"] == large["quoted"] == 200
    assert small["stored"] == large["stored"] < 1000
    for name in ("list", "page", "mail text", "mail html"):
        # Only the import's id and times differ between the two.
        assert abs(small[name] - large[name]) < 100, (name, small[name], large[name])
