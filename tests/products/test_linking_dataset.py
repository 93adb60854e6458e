"""The cascade on devkit.catalogue_set's data set: our catalogue of 5,000 products and
six supplier lists written the ways suppliers write (look-alike letters, separators,
leading zeros, abbreviations, ё, reordered words, sizes spelled otherwise, barcodes and
brands missing), with decoys, products we do not carry and barcode conflicts.

Done when (issue 31): automatic links ≥ 99.5 % right, no decoy linked automatically,
≥ 90 % of the true matches linked or proposed first. The figures are printed."""

from __future__ import annotations

import pytest

from devkit import catalogue_set
from products.linking import links_match
from products.models import LinkCandidate, SupplierLink
from tests import factories

from .lines import accepted_import, products

pytestmark = pytest.mark.django_db


def test_the_six_lists_are_linked_precisely_and_almost_completely(mailbox, capsys):
    catalogue, lists = catalogue_set.data_set(5000, seed=31)
    made = products((p.own_code, p.name, p.spec.brand, p.article, [p.barcode]) for p in catalogue)
    own = {p.pk: p.own_code for p in made}
    auto = auto_right = decoys_auto = true = found_first = 0
    for name, lines in lists.items():
        config = factories.create_config(mailbox, name=name)
        price_import = accepted_import(
            config,
            ((x.sku, x.name, x.brand, x.article, [x.barcode] if x.barcode else []) for x in lines),
        )
        links_match(config_id=config.pk, import_id=price_import.pk)
        links = {link.supplier_sku: link for link in SupplierLink.objects.filter(config=config)}
        first = {
            c.supplier_sku: c.product_id
            for c in LinkCandidate.objects.filter(config=config, rank=1)
        }
        for x in lines:
            link = links.get(x.sku)
            if link is not None and link.state == SupplierLink.State.AUTO:
                auto += 1
                auto_right += own[link.product_id] == x.truth
                decoys_auto += x.kind == catalogue_set.DECOY
            if x.truth:
                true += 1
                chosen = link.product_id if link is not None else first.get(x.sku)
                found_first += chosen is not None and own[chosen] == x.truth
    precision = auto_right / auto
    recall = found_first / true
    with capsys.disabled():
        print(
            f"\nmatching: {auto} automatic links, precision {precision:.2%}; "
            f"{found_first} of {true} true matches linked or proposed first ({recall:.2%}); "
            f"decoys linked automatically: {decoys_auto}"
        )
    assert precision >= 0.995
    assert decoys_auto == 0
    assert recall >= 0.90
