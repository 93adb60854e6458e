"""Properties of a message's cell budget (PRICEFEED_MESSAGE_PARSE_CELLS, issue 30):
whatever order a message's imports are charged in, retried or requeued any number of
times, what its imports hold charged never exceeds the budget, a charge is refused
exactly when the file does not fit beside what its siblings hold, and a run replaces
its own import's charge (a model of the accounting is checked after every charge)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from pricefeed import parsing
from pricefeed.imports.lifecycle import charge_cells
from pricefeed.models import PriceImport
from tests import factories

pytestmark = pytest.mark.django_db

Status = PriceImport.Status


@st.composite
def charges(draw):
    """(budget, each file's cells, the order its imports are charged in: an import
    charged again is a retry, a requeue or a worker's second claim)."""
    spans = draw(st.lists(st.integers(1, 1000), min_size=1, max_size=8))
    budget = draw(st.integers(1, 3000))
    order = draw(st.lists(st.integers(0, len(spans) - 1), min_size=1, max_size=15))
    return budget, spans, order


@hypothesis_settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(charges())
def test_what_a_message_holds_charged_never_exceeds_its_budget(mailbox, config, settings, case):
    budget, spans, order = case
    settings.PRICEFEED_MESSAGE_PARSE_CELLS = budget
    message = factories.create_message(mailbox)  # a message of its own per example
    imports = [
        PriceImport.objects.create(
            message=message,
            config=config,
            attachment_key=f"part{i}",
            status=Status.RUNNING,
            claimed_by="w",
        )
        for i in range(len(spans))
    ]
    held = [0] * len(spans)  # the model: what each import holds charged
    for i in order:
        others = sum(held) - held[i]
        try:
            charge_cells(imports[i], "w", spans[i])
        except parsing.WorkbookRefused:
            assert others + spans[i] > budget
            held[i] = 0
        else:
            assert others + spans[i] <= budget
            held[i] = spans[i]
        stored = list(
            PriceImport.objects.filter(message=message)
            .order_by("pk")
            .values_list("cells_charged", flat=True)
        )
        assert stored == held
        assert sum(stored) <= budget
