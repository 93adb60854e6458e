"""Loading our catalogue into the database (products.loading): reloads add, change and
retire products, never delete one; what the load did is counted exactly, also dry."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, connection

from outbox.models import OutboxEvent
from products.events import PRODUCTS_CHANGED
from products.loaders import CatalogueRefused
from products.loading import products_load
from products.models import Product, SupplierLink
from tests.factories import create_config, create_mailbox

from .samples import CML_BOLT, CML_DELETED, CML_NUT, commerceml, template_csv

# products_load is a durable transaction of its own.
pytestmark = pytest.mark.django_db(transaction=True)

BOLT = ("P-1", "Болт М8х40", "Bosch", "A-1", "4600000000008", "шт", "Крепёж / Болты")
NUT = ("P-2", "Гайка М8", "Kreps", "A-2", "", "шт", "Крепёж / Гайки")
WASHER = ("P-3", "Шайба 8", "", "", "", "шт", "Крепёж")


def load(tmp_path, rows, **options):
    path = tmp_path / "catalogue.csv"
    path.write_text(template_csv(rows))
    return products_load(path, **options)


def catalogue() -> dict[str, tuple]:
    return {
        p.own_code: (p.name, p.brand, p.barcodes, p.category, p.active)
        for p in Product.objects.all()
    }


def test_a_first_load_adds_every_product(tmp_path):
    result = load(tmp_path, [BOLT, NUT])

    assert (result.read, result.added, result.changed, result.retired) == (2, 2, 0, 0)
    assert catalogue() == {
        "P-1": ("Болт М8х40", "Bosch", ["4600000000008"], "Крепёж / Болты", True),
        "P-2": ("Гайка М8", "Kreps", [], "Крепёж / Гайки", True),
    }


def indexes() -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s ORDER BY 1",
            [Product._meta.db_table],
        )
        return cursor.fetchall()


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_first_load_leaves_the_indexes_it_builds_after_as_they_were(tmp_path, dry_run):
    before = indexes()

    load(tmp_path, [BOLT, NUT], dry_run=dry_run)

    assert indexes() == before
    assert any("UNIQUE" in definition and "own_code" in definition for _, definition in before)
    if not dry_run:
        with pytest.raises(IntegrityError):
            Product.objects.create(own_code="P-1", name="the same code again")


def test_a_reload_adds_changes_retires_and_leaves_the_rest(tmp_path):
    load(tmp_path, [BOLT, NUT])
    before = Product.objects.get(own_code="P-1").updated_at
    changed_nut = ("P-2", "Гайка М8 DIN934", *NUT[2:])

    result = load(tmp_path, [BOLT, changed_nut, WASHER])
    again = load(tmp_path, [BOLT, WASHER])

    assert (result.added, result.changed, result.unchanged, result.retired) == (1, 1, 1, 0)
    assert (again.added, again.changed, again.unchanged, again.retired) == (0, 0, 2, 1)
    assert Product.objects.get(own_code="P-1").updated_at == before  # unchanged: untouched
    nut = Product.objects.get(own_code="P-2")
    assert nut.name == "Гайка М8 DIN934" and nut.retired_at is not None


def announced() -> list[list[int]]:
    return [
        event.payload["product_ids"]
        for event in OutboxEvent.objects.filter(kind=PRODUCTS_CHANGED).order_by("created_at")
    ]


def test_a_reload_announces_the_products_whose_category_or_brand_changed(tmp_path):
    load(tmp_path, [BOLT, NUT, WASHER])
    assert announced() == []  # a first load: nothing was priced yet
    recategorised = (*BOLT[:6], "Крепёж / Болты / DIN 933")
    rebranded = ("P-2", NUT[1], "Зубр", *NUT[3:])
    renamed = ("P-3", "Шайба 8 DIN 125", *WASHER[2:])

    load(tmp_path, [recategorised, rebranded, renamed], dry_run=True)
    assert announced() == []  # a dry run rolls its event back with the rest
    load(tmp_path, [recategorised, rebranded, renamed])

    ids = dict(Product.objects.values_list("own_code", "id"))
    # The name alone does not change which price rules apply.
    assert announced() == [sorted([ids["P-1"], ids["P-2"]])]


def test_a_retired_product_that_reappears_is_active_again(tmp_path):
    load(tmp_path, [BOLT, NUT])
    load(tmp_path, [BOLT])

    result = load(tmp_path, [BOLT, NUT])

    assert (result.changed, result.reactivated, result.added) == (1, 1, 0)
    assert Product.objects.get(own_code="P-2").active


def test_a_retired_product_still_missing_is_neither_retired_again_nor_counted(tmp_path):
    load(tmp_path, [BOLT, NUT])
    load(tmp_path, [BOLT])
    retired_at = Product.objects.get(own_code="P-2").retired_at

    result = load(tmp_path, [BOLT])

    assert (result.added, result.changed, result.unchanged, result.retired) == (0, 0, 1, 0)
    assert Product.objects.get(own_code="P-2").retired_at == retired_at


def test_a_linked_product_missing_from_a_reload_is_retired_not_deleted(tmp_path):
    load(tmp_path, [BOLT, NUT])
    config = create_config(create_mailbox())
    link = SupplierLink.objects.create(
        config=config,
        supplier_sku="S-1",
        product=Product.objects.get(own_code="P-2"),
        kind=SupplierLink.Kind.BARCODE,
        confidence=Decimal("1"),
        state=SupplierLink.State.AUTO,
    )

    result = load(tmp_path, [BOLT])

    assert result.retired == 1
    link.refresh_from_db()
    assert link.product.own_code == "P-2" and not link.product.active


def test_no_retire_keeps_what_a_partial_file_does_not_list(tmp_path):
    load(tmp_path, [BOLT, NUT])
    result = load(tmp_path, [WASHER], retire=False)
    assert (result.added, result.retired) == (1, 0)
    assert all(active for *_, active in catalogue().values())


def test_a_refused_lines_code_is_not_retired(tmp_path):
    load(tmp_path, [BOLT, NUT])
    nameless_nut = ("P-2", "", "", "", "", "", "")

    result = load(tmp_path, [BOLT, nameless_nut])

    assert (result.refused, result.retired) == (1, 0)
    assert Product.objects.get(own_code="P-2").active


def test_a_dry_run_counts_what_it_would_do_and_writes_nothing(tmp_path):
    load(tmp_path, [BOLT, NUT])
    before = catalogue()

    result = load(tmp_path, [WASHER], dry_run=True)

    assert (result.added, result.retired, result.dry_run) == (1, 2, True)
    assert catalogue() == before


def test_a_full_file_with_no_product_retires_nothing(tmp_path):
    load(tmp_path, [BOLT])
    with pytest.raises(CatalogueRefused, match="holds no product"):
        load(tmp_path, [("", "no code", "", "", "", "", "")])
    assert Product.objects.get(own_code="P-1").active


def test_commerceml_changes_only_retires_only_what_it_marks_deleted(tmp_path):
    full = tmp_path / "import.xml"
    full.write_text(commerceml(CML_BOLT + CML_NUT + CML_DELETED.replace(' Статус="Удален"', "")))
    products_load(full)
    changes = tmp_path / "changes.xml"
    changes.write_text(commerceml(CML_NUT + CML_DELETED, only_changes=True))

    result = products_load(changes)

    assert (result.full, result.retired, result.unchanged) == (False, 1, 1)
    active = set(Product.objects.active().values_list("name", flat=True))
    assert active == {"Болт М8х40 оцинкованный", "Гайка М8"}


def test_values_with_tabs_backslashes_and_nul_are_stored_as_read(tmp_path):
    path = tmp_path / "catalogue.csv"
    path.write_text('own_code;name;brand\nP-\\1;"Болт\tМ8 \\ 40";"Bo\x00sch"\n', encoding="utf-8")
    products_load(path)
    product = Product.objects.get()
    assert (product.own_code, product.name, product.brand) == ("P-\\1", "Болт М8 \\ 40", "Bosch")
