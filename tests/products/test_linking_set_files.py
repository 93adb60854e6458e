"""devkit.catalogue_set's files: our catalogue in our CSV template, the supplier lists as
xlsx with the usual Russian columns, the truth beside them."""

from __future__ import annotations

import csv

from django.core.management import call_command
from python_calamine import CalamineWorkbook

from devkit.catalogue_set import CATALOGUE_HEADER, LIST_HEADER


def test_the_set_is_written_as_our_template_and_supplier_workbooks(tmp_path):
    call_command("catalogue_set", str(tmp_path), "--products", "200")
    with (tmp_path / "catalogue.csv").open(encoding="utf-8") as f:
        catalogue = list(csv.reader(f, delimiter=";"))
    assert catalogue[0] == CATALOGUE_HEADER
    assert len(catalogue) == 201
    with (tmp_path / "truth.csv").open(encoding="utf-8") as f:
        truth = list(csv.DictReader(f, delimiter=";"))
    kinds = {row["kind"] for row in truth}
    assert {"match", "decoy", "absent"} <= kinds
    ours = {row[0] for row in catalogue[1:]}
    assert all(row["own_code"] in ours for row in truth if row["kind"] in ("match", "conflict"))
    for n in range(1, 7):
        rows = (
            CalamineWorkbook.from_path(str(tmp_path / f"supplier{n}.xlsx"))
            .get_sheet_by_index(0)
            .to_python()
        )
        assert rows[0] == LIST_HEADER
        assert len(rows) - 1 == sum(1 for row in truth if row["list"] == f"supplier{n}")
