"""The catalogue kept in the items table: a config's first list made current as it is
stored, the same as any other import makes it current afterwards (pricefeed.catalogue,
pricefeed.imports.storage)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devkit.samples import price_list_csv, price_list_xlsx
from pricefeed import catalogue
from pricefeed.imports import storage
from pricefeed.models import CatalogueEntry, PriceImport, PriceItem
from pricefeed.parsing import rows as parsing_rows
from tests.factories import receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

Status = PriceImport.Status

# Out of order, B and A listed twice: the last row of each counts, as in the file.
REPEATS = [
    ("B", "Гайка", Decimal(20), 1),
    ("A", "Болт", Decimal(10), 1),
    ("C", "Шайба", Decimal(30), 1),
    ("B", "Гайка М8", Decimal(21), 2),
    ("A", "Болт М6", Decimal(11), 3),
]


def send(mailbox, data: bytes, name: str = "прайс.csv") -> PriceImport:
    (price_import,) = run_all(receive(mailbox, [(name, data)]))
    assert price_import.status == Status.SUCCEEDED, price_import.last_error
    return price_import


def current(config) -> dict[str, tuple]:
    return {
        e.sku: (e.name, e.price, e.quantity, e.row_number)
        for e in catalogue.catalogue_current(config.pk)
    }


@pytest.fixture(params=["blocks", "rows"])
def small_blocks(request, monkeypatch):
    """CSV rows come a few at a time: a repeat falls across block borders (and, for
    "rows", the text is read as row tuples instead of column blocks)."""
    monkeypatch.setattr(parsing_rows, "TEXT_CHUNK", 2)
    return request.param


def test_a_first_list_makes_the_last_row_of_a_repeated_sku_current(mailbox, config, small_blocks):
    data = (
        price_list_csv(REPEATS)
        if small_blocks == "blocks"
        else price_list_xlsx([(sku, name, price, qty) for sku, name, price, qty in REPEATS])
    )
    first = send(mailbox, data, "прайс.csv" if small_blocks == "blocks" else "прайс.xlsx")

    entries = current(config)
    assert {sku: (name, price, qty) for sku, (name, price, qty, _) in entries.items()} == {
        "A": ("Болт М6", 11, 3),
        "B": ("Гайка М8", 21, 2),
        "C": ("Шайба", 30, 1),
    }
    # One entry per SKU, each from this import, current from the moment it was accepted.
    assert CatalogueEntry.objects.filter(config=config).count() == 3
    assert set(CatalogueEntry.objects.values_list("price_import_id", "valid_from")) == {
        (first.pk, first.accepted_at)
    }
    assert first.diff == {"previous_import": None, "added": 5, "removed": 0, "changed": 0}

    # The next list compares with those rows.
    second = send(mailbox, price_list_csv([("A", "Болт М6", Decimal(12), 3)]))
    assert (second.diff["changed"], second.diff["removed"]) == (1, 2)


def test_a_first_list_is_stored_current_without_a_second_write(mailbox, config):
    rows = [(f"S-{i:03}", f"Товар {i}", Decimal(100 + i), 1) for i in range(30)]
    with CaptureQueriesContext(connection) as queries:
        first = send(mailbox, price_list_csv(rows))

    updates = [
        q["sql"] for q in queries.captured_queries if "UPDATE pricefeed_priceitem" in q["sql"]
    ]
    assert updates == []  # current as they were COPYed: no SKU repeats, nothing to mend
    assert len(current(config)) == 30
    assert first.accepted_at is not None


def test_a_hash_collision_in_a_first_list_is_mended(mailbox, config, monkeypatch):
    # ItemWriter tells a repeated SKU by its hash: two SKUs with one hash look like a
    # repeat while the rows are stored, and the catalogue then makes the second current.
    real = hash

    def colliding(value):
        return 7 if value in ("B", "Z") else real(value)

    monkeypatch.setattr(storage, "hash", colliding, raising=False)
    rows = [
        ("C", "Шайба", Decimal(30), 1),
        ("B", "Гайка", Decimal(20), 1),  # out of order: the hashes are compared from here
        ("Z", "Винт", Decimal(40), 1),
    ]
    send(mailbox, price_list_csv(rows))

    assert {sku: price for sku, (_, price, _, _) in current(config).items()} == {
        "C": 30,
        "B": 20,
        "Z": 40,
    }


def test_a_catalogue_emptied_by_a_deletion_takes_the_next_list_whole(mailbox, config):
    first = send(mailbox, price_list_csv([("A", "Болт", Decimal(10), 1)]))
    second = send(mailbox, price_list_csv([("B", "Гайка", Decimal(20), 1)]))
    # The first import's A was ended by the second; deleting the second leaves no
    # current entry, and A's entry ended by an import that is gone.
    second.delete()
    (a,) = CatalogueEntry.objects.filter(config=config)
    assert (a.sku, a.price_import_id, a.ended_by_id) == ("A", first.pk, None)
    assert a.valid_to is not None

    third = send(mailbox, price_list_csv([("C", "Шайба", Decimal(30), 1)]))

    assert current(config) == {"C": ("Шайба", 30, 1, 3)}
    assert third.diff["added"] == 1 and third.diff["previous_import"] == first.pk


@pytest.mark.parametrize("quantity", ["1", ""])  # "": no quantity, stored as NULL
def test_texts_that_look_like_copy_escapes_are_stored_as_they_are(mailbox, config, quantity):
    names = ["\\N", "a\\b", "C:\\Прайс\\", "\\t"]
    rows = [(f"S-{i}", name, Decimal(10), quantity) for i, name in enumerate(names)]
    price_import = send(mailbox, price_list_csv(rows))

    stored = dict(PriceItem.objects.of_import(price_import.pk).values_list("sku", "name"))
    assert stored == {f"S-{i}": name for i, name in enumerate(names)}
    assert {sku: name for sku, (name, *_) in current(config).items()} == stored
    quantities = set(
        PriceItem.objects.of_import(price_import.pk).values_list("quantity", flat=True)
    )
    assert quantities == ({Decimal(1)} if quantity else {None})


def test_the_copy_text_of_a_second_list_is_not_escaped_for_its_own_nulls(monkeypatch):
    # Ends.stored holds a \N of its own: its backslash is no reason to make the lines
    # again with every text escaped (that doubled the time of every import but a first
    # one). Escaping is made visible here: it would turn "A" into "X".
    monkeypatch.setattr(storage, "COPY_ESCAPES", str.maketrans({"A": "X"}))
    ends = storage.Ends(7)
    rows = [(2, "A", "Болт", Decimal("1.5"), "RUB", None), (3, "B", "Гайка", Decimal(2), "", 4)]
    text = storage._copy_text(1, rows, ends.stored)
    assert [line.split("\t")[3:] for line in text.splitlines()] == [
        ["A", "Болт", "1.5", "RUB", "\\N", "7", "\\N"],
        ["B", "Гайка", "2", "", "4", "7", "\\N"],
    ]
    block = storage.parsing.RowBlock(
        first_row=2,
        skus=["A", "B"],
        names=["Болт", "Гайка"],
        prices=["1.5", "2"],
        currencies="RUB",
        quantities=[None, "4"],
    )
    text = storage._block_copy_text(1, block, ends.stored)
    assert [line.split("\t")[3:] for line in text.splitlines()] == [
        ["A", "Болт", "1.5", "RUB", "\\N", "7", "\\N"],
        ["B", "Гайка", "2", "RUB", "4", "7", "\\N"],
    ]


def test_the_database_refuses_two_current_entries_of_a_sku(mailbox, config):
    from django.db import IntegrityError, transaction

    first = send(mailbox, price_list_csv([("A", "Болт", Decimal(10), 1)]))
    second = send(mailbox, price_list_csv([("A", "Болт", Decimal(11), 1)]))
    (ended,) = PriceItem.objects.of_import(first.pk)
    assert ended.valid_to is not None  # a past value: any number of them
    with pytest.raises(IntegrityError), transaction.atomic():
        # Made current again beside the second import's row: one current entry per SKU.
        PriceItem.objects.filter(pk=ended.pk).update(valid_to=None)
    assert len(current(config)) == 1 and second.accepted_at is not None
