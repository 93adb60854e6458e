"""Issue 30's per-message bounds through a real Dovecot, ``listen_mail`` and ``qcluster``
with the production parsing limits (devkit.hostile's cases ``message-cells`` and
``empty-rows``).

* Six workbooks of 512 KB in one message, each spanning 32 M cells (within every limit
  of its own): four are read, within PRICEFEED_MESSAGE_PARSE_CELLS (128 M cells), and
  the other two end FAILED unread with the reason naming it; the message ends DONE, no
  process aborts, the worker tree stays under 2 GB, the next price list imports.
* Two price rows a million empty rows apart import as two rows.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from devkit.hostile import CASES_BY_NAME, acceptance_problems
from pricefeed.models import PriceImport, PriceItem
from tests.requirements import require_dovecot

from .support import hostile_rig

pytestmark = pytest.mark.integration

RECORDED_WITHIN = 30.0
SETTLED_WITHIN = 120.0
WORKER_TREE_RSS_LIMIT = 2 * 10**9
CASES = [CASES_BY_NAME["message-cells"], CASES_BY_NAME["empty-rows"]]


@pytest.fixture
def rig(transactional_db, tmp_path):
    require_dovecot()
    with hostile_rig(CASES, tmp_path) as rig:
        yield rig


def run(rig, name: str):
    case = CASES_BY_NAME[name]
    result = rig.run(name, recorded_within=RECORDED_WITHIN, settled_within=SETTLED_WITHIN)
    problems = acceptance_problems(
        case,
        result,
        recorded_within=RECORDED_WITHIN,
        settled_within=SETTLED_WITHIN,
        workers_rss_limit=WORKER_TREE_RSS_LIMIT,
    )
    assert not problems, f"{case.title}:\n- " + "\n- ".join(problems)
    return result


@pytest.mark.timeout(2 * (SETTLED_WITHIN + 60))
def test_a_message_past_its_cell_budget_has_its_last_files_refused_unread(rig):
    run(rig, "message-cells")

    imports = PriceImport.objects.filter(
        message__mailbox_id=rig.mailbox_ids["message-cells"], filename__startswith="span_"
    )
    read = imports.filter(cells_charged__gt=0)
    refused = imports.filter(cells_charged=0)
    assert read.count() == 4
    assert {i.last_error for i in read} == {"no valid price rows"}
    assert refused.count() == 2
    for price_import in refused:
        assert price_import.status == PriceImport.Status.FAILED
        assert price_import.last_error.startswith("this file spans 31,999,712 cells")
        assert "(PRICEFEED_MESSAGE_PARSE_CELLS, 128,000,000)" in price_import.last_error
    assert sum(i.cells_charged for i in read) <= settings.PRICEFEED_MESSAGE_PARSE_CELLS


@pytest.mark.timeout(2 * (SETTLED_WITHIN + 60))
def test_two_price_rows_a_million_empty_rows_apart_import_as_two_rows(rig):
    run(rig, "empty-rows")

    price_import = PriceImport.objects.get(
        message__mailbox_id=rig.mailbox_ids["empty-rows"], filename="prices.xlsx"
    )
    assert (price_import.rows_ok, price_import.rows_skipped) == (2, 999_996)
    rows = list(
        PriceItem.objects.of_import(price_import.pk)
        .order_by("row_number")
        .values_list("sku", "row_number")
    )
    assert rows == [("A-1", 2), ("A-2", 999_999)]
