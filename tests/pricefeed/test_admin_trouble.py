"""Trouble is findable from the lists: a message's row tells what became of its imports
and the message list finds those with a failed or partial one (their own status is
DONE); an import's row says why it failed or is partial, how long it took and how far a
running one got."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from devkit.samples import price_list_csv
from mailboxes.models import InboundMessage
from pricefeed.models import PriceImport
from tests.factories import ROWS, receive, run_all
from tests.pricefeed.test_admin_imports import ONE_BAD_ROW_CSV, PDF

Status = PriceImport.Status
MESSAGES = reverse("admin:mailboxes_inboundmessage_changelist")
IMPORTS = reverse("admin:pricefeed_priceimport_changelist")

pytestmark = pytest.mark.usefixtures("no_queue", "fast_password_hashing")


def cell(content: str, column: str, row: int = 0) -> str:
    """The text of a list's cell (tags stripped) in the ``row``-th row."""
    cells = re.findall(rf'<td class="field-{column}[^"]*">(.*?)</td>', content, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", cells[row])).replace("\xa0", " ").strip()


def titles(content: str) -> list[str]:
    return re.findall(r'title="([^"]*)"', content)


@pytest.fixture
def troubled(mailbox, config) -> InboundMessage:
    """A message DONE whose four files made 2 good imports, 1 failed and 1 partial."""
    message = receive(
        mailbox,
        [
            ("a.csv", price_list_csv(ROWS)),
            ("b.csv", price_list_csv(ROWS)),
            ("price.pdf", PDF),
            ("q.csv", ONE_BAD_ROW_CSV),
        ],
        subject="Прайсы за июнь",
    )
    run_all(message)
    message.refresh_from_db()
    assert message.status == InboundMessage.Status.DONE
    return message


@pytest.fixture
def clean(mailbox, config) -> InboundMessage:
    message = receive(mailbox, [("c.csv", price_list_csv(ROWS))], subject="Чистый")
    run_all(message)
    return message


# -- messages ----------------------------------------------------------------------------


def test_a_message_row_counts_the_outcomes_of_its_imports(admin_client, troubled):
    content = admin_client.get(MESSAGES).content.decode()

    assert cell(content, "imports_outcome") == "2 ok, 1 failed, 1 partial"
    assert '<span class="pf-error">1 failed</span>' in content


def test_a_message_row_shows_its_last_error_whole_on_hover(admin_client, make_message):
    error = "refused: more MIME parts than PRICEFEED_MIME_MAX_PARTS (500) " + "x" * 300
    make_message(status=InboundMessage.Status.REJECTED, last_error=error)

    content = admin_client.get(MESSAGES).content.decode()

    shown = cell(content, "short_error")
    assert shown.startswith("refused: more MIME parts") and shown.endswith("…")
    assert len(shown) < len(error)
    assert error in titles(content)


def test_the_message_list_finds_those_with_failed_or_partial_imports(
    admin_client, troubled, clean, make_message
):
    make_message(status=InboundMessage.Status.IGNORED)

    response = admin_client.get(MESSAGES, {"imports": "failed_or_partial"})

    assert [m.pk for m in response.context["cl"].result_list] == [troubled.pk]
    assert "has failed or partial imports" in response.content.decode()
    # Its own status says nothing of it: the status filter alone cannot find it.
    failed = admin_client.get(MESSAGES, {"status__in": "RETRYABLE,FAILED,REJECTED"})
    assert not failed.context["cl"].result_list


def test_the_message_list_finds_those_that_made_no_import_or_wait_for_one(
    admin_client, troubled, make_message
):
    ignored = make_message(status=InboundMessage.Status.IGNORED)
    PriceImport.objects.filter(message=troubled, filename="a.csv").update(status=Status.PENDING)

    none = admin_client.get(MESSAGES, {"imports": "none"})
    waiting = admin_client.get(MESSAGES, {"imports": "waiting"})

    assert [m.pk for m in none.context["cl"].result_list] == [ignored.pk]
    assert [m.pk for m in waiting.context["cl"].result_list] == [troubled.pk]
    assert cell(waiting.content.decode(), "imports_outcome") == (
        "1 ok, 1 failed, 1 partial, 1 waiting"
    )


def queries_for(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_message_list_costs_the_same_queries_for_one_message_or_many(
    admin_client, mailbox, config
):
    run_all(receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("p.pdf", PDF)]))
    one = queries_for(admin_client, MESSAGES)
    for n in range(4):
        run_all(receive(mailbox, [("a.csv", price_list_csv(ROWS))], subject=f"ещё {n}"))

    assert queries_for(admin_client, MESSAGES) == one


# -- imports -----------------------------------------------------------------------------


def test_a_failed_import_row_says_why(admin_client, troubled):
    content = admin_client.get(IMPORTS, {"status__exact": Status.FAILED}).content.decode()

    assert cell(content, "reason") == "unsupported format: pdf"
    assert '<span class="pf-cell pf-l pf-error" title="unsupported format: pdf">' in content


def test_a_partial_import_row_says_how_many_rows_failed_and_the_first(admin_client, troubled):
    content = admin_client.get(IMPORTS, {"status__exact": Status.PARTIAL}).content.decode()

    reason = cell(content, "reason")
    assert reason.startswith("1 row failed; row 3: ")
    assert "по запросу" in reason or "price" in reason
    assert cell(content, "rows") == "19 / 1"


def test_an_import_row_shows_how_long_it_ran(admin_client, clean):
    started = timezone.now() - timedelta(minutes=5)
    PriceImport.objects.update(started_at=started, finished_at=started + timedelta(seconds=125))

    content = admin_client.get(IMPORTS).content.decode()

    assert cell(content, "duration") == "2 min 05 s"


def test_a_running_import_row_shows_the_rows_read_so_far(admin_client, clean):
    PriceImport.objects.update(
        status=Status.RUNNING, rows_read=1200, started_at=timezone.now(), finished_at=None
    )

    content = admin_client.get(IMPORTS).content.decode()

    assert "read so far" in cell(content, "rows")
    assert cell(content, "duration") == "—"


def test_the_import_list_costs_the_same_queries_for_one_import_or_many(
    admin_client, mailbox, config
):
    run_all(receive(mailbox, [("q.csv", ONE_BAD_ROW_CSV)]))
    one = queries_for(admin_client, IMPORTS)
    run_all(receive(mailbox, [("a.csv", price_list_csv(ROWS)), ("p.pdf", PDF)]))
    run_all(receive(mailbox, [("q.csv", ONE_BAD_ROW_CSV)], subject="ещё"))

    assert queries_for(admin_client, IMPORTS) == one
