"""links_export and links_import (manage.py commands and products.links_transfer): the
contract's CSV, xlsx, a file read back unchanged changes nothing, a fixed row becomes an
imported confirmed link, a bad row refuses the whole file with a reason in Russian."""

from __future__ import annotations

import csv
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import translation

from products.links_transfer import HEADER, links_export, links_import
from products.models import LinkEvent, SupplierLink
from tests import factories

from .lines import accepted_import, products

pytestmark = pytest.mark.django_db

State = SupplierLink.State


@pytest.fixture
def linked(mailbox):
    """A config with a current catalogue of three lines: A1 linked automatically to
    OWN-1, A2 proposed for OWN-2, A3 unlinked."""
    made = {
        p.own_code: p
        for p in products(
            [
                ("OWN-1", "Болт М8х40", "", "", []),
                ("OWN-2", "Гайка М8", "", "", []),
                ("OWN-3", "Шайба 8", "", "", []),
            ]
        )
    }
    config = factories.create_config(mailbox)
    accepted_import(config, [(s, "x", "", "", []) for s in ("A1", "A2", "A3")])
    SupplierLink.objects.create(
        config=config, supplier_sku="A1", product=made["OWN-1"], kind="barcode",
        confidence=Decimal(1), state=State.AUTO,
    )  # fmt: skip
    SupplierLink.objects.create(
        config=config, supplier_sku="A2", product=made["OWN-2"], kind="name",
        confidence=Decimal("0.7"), state=State.PROPOSED,
    )  # fmt: skip
    return config, made


def read(path):
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter=";"))


def write(path, rows):
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=";").writerows([HEADER, *rows])


def test_the_export_has_every_link_and_every_unlinked_line(linked, tmp_path):
    config, _ = linked
    path = tmp_path / "links.csv"
    call_command("links_export", str(path))
    c = str(config.pk)
    assert read(path) == [
        ["config", "supplier_sku", "own_code", "state", "kind", "confidence"],
        [c, "A1", "OWN-1", "auto", "barcode", "1.000"],
        [c, "A2", "OWN-2", "proposed", "name", "0.700"],
        [c, "A3", "", "", "", ""],
    ]


def test_an_exported_file_read_back_changes_nothing(linked, tmp_path):
    path = tmp_path / "links.csv"
    links_export(path)
    done = links_import(path)
    assert done.changed == 0
    assert not LinkEvent.objects.exists()


def test_fixed_rows_become_imported_confirmed_links(linked, tmp_path):
    config, made = linked
    user = get_user_model().objects.create_user("operator")
    path = tmp_path / "links.csv"
    c = str(config.pk)
    write(
        path,
        [
            [c, "A1", "OWN-3", "auto", "barcode", "1.000"],  # another product
            [c, "A2", "OWN-2", "confirmed", "name", "0.700"],  # confirmed as proposed
            [c, "A3", "OWN-1", "", "", ""],  # an unlinked line linked
        ],
    )
    call_command("links_import", str(path), "--user", "operator")
    links = {link.supplier_sku: link for link in SupplierLink.objects.all()}
    assert {sku: (link.product.own_code, link.kind, link.state) for sku, link in links.items()} == {
        "A1": ("OWN-3", "imported", "confirmed"),
        "A2": ("OWN-2", "imported", "confirmed"),
        "A3": ("OWN-1", "imported", "confirmed"),
    }
    assert all(link.confirmed_by == user and link.confirmed_at for link in links.values())
    event = LinkEvent.objects.get(link=links["A1"])
    assert (event.product_before, event.product_after, event.user) == (
        made["OWN-1"],
        made["OWN-3"],
        user,
    )


def test_a_file_with_a_bad_row_is_refused_whole_with_the_reasons_in_russian(
    linked, tmp_path, capsys
):
    config, _ = linked
    path = tmp_path / "links.csv"
    c = str(config.pk)
    write(
        path,
        [
            [c, "A3", "OWN-1", "", "", ""],  # good, but not applied
            [c, "A1", "OWN-404", "", "", ""],
            ["999999", "A2", "OWN-2", "", "", ""],
            [c, "A2", "OWN-2", "maybe", "", ""],
        ],
    )
    with translation.override("ru"), pytest.raises(CommandError) as refused:
        call_command("links_import", str(path))
    err = capsys.readouterr().err
    assert "строка 3: нет товара с собственным кодом OWN-404" in err
    assert "строка 4: нет конфигурации 999999" in err
    assert "строка 5: неизвестное состояние maybe" in err
    assert "ничего не применено" in str(refused.value)
    assert not SupplierLink.objects.filter(supplier_sku="A3").exists()


def test_links_go_out_and_back_as_xlsx(linked, tmp_path):
    config, _ = linked
    path = tmp_path / "links.xlsx"
    assert links_export(path) == 3
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(HEADER)
    sheet.append([config.pk, "A3", "OWN-2", "", "", ""])
    fixed = tmp_path / "fixed.xlsx"
    book.save(fixed)
    assert links_import(fixed).changed == 1
    assert SupplierLink.objects.get(supplier_sku="A3").product.own_code == "OWN-2"
