"""The current catalogue of a config: what an accepted import changes in it, as of any
moment, each SKU's history, what changed since, and the imports held for an operator
(pricefeed.catalogue)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devkit.samples import price_list_csv
from pricefeed import catalogue
from pricefeed.imports.lifecycle import price_import_run
from pricefeed.models import CatalogueEntry, PriceImport, PriceListConfig
from tests.factories import english, receive, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

Review = PriceImport.Review
Status = PriceImport.Status


def send(mailbox, rows) -> PriceImport:
    (price_import,) = run_all(receive(mailbox, [("прайс.csv", price_list_csv(rows))]))
    assert price_import.status in (Status.SUCCEEDED, Status.PARTIAL), price_import.last_error
    return price_import


def current(config) -> dict[str, Decimal]:
    return {e.sku: e.price for e in catalogue.catalogue_current(config.pk)}


def items(n: int, *, price: int = 100, start: int = 0) -> list[tuple]:
    return [(f"S-{i:03}", f"Товар {i}", Decimal(price), 1) for i in range(start, start + n)]


def test_a_snapshot_makes_its_rows_current_and_keeps_what_was_before(mailbox, config):
    first = send(
        mailbox,
        [
            ("A", "Болт", Decimal(10), 1),
            ("B", "Гайка", Decimal(20), 1),
            ("C", "Шайба", Decimal(30), 1),
        ],
    )
    assert first.accepted_at is not None and first.review == ""
    assert current(config) == {"A": 10, "B": 20, "C": 30}

    second = send(
        mailbox,
        [
            ("A", "Болт", Decimal(11), 1),
            ("B", "Гайка", Decimal(20), 1),
            ("D", "Винт", Decimal(40), 1),
        ],
    )

    assert current(config) == {"A": 11, "B": 20, "D": 40}
    diff = second.diff
    assert (diff["added"], diff["removed"], diff["changed"]) == (1, 1, 1)
    assert diff["previous_import"] == first.pk
    # As of the first import's moment: its catalogue, the values since replaced too.
    then = {e.sku: e.price for e in catalogue.catalogue_current(config.pk, as_of=first.accepted_at)}
    assert then == {"A": 10, "B": 20, "C": 30}
    # B did not change: its entry is still the first import's.
    b = CatalogueEntry.objects.get(config=config, sku="B", valid_to__isnull=True)
    assert b.price_import_id == first.pk
    history = list(catalogue.sku_history(config.pk, "A"))
    assert [(e.price, e.price_import_id) for e in history] == [(11, second.pk), (10, first.pk)]
    assert history[1].valid_to == second.accepted_at and history[1].ended_by_id == second.pk
    changes = catalogue.changes_since_import(first)
    assert sorted(e.sku for e in changes.current) == ["A", "D"]
    assert [e.sku for e in changes.removed] == ["C"]


def test_the_same_list_again_changes_nothing(mailbox, config):
    rows = items(5)
    send(mailbox, rows)
    before = list(CatalogueEntry.objects.order_by("pk").values_list("pk", "valid_to"))

    with CaptureQueriesContext(connection) as queries:
        again = send(mailbox, rows)

    # Its digest is the current list's: nothing of the catalogue is read or written
    # (the catalogue is kept in the items table: no item is updated).
    written = [
        q["sql"] for q in queries.captured_queries if "UPDATE pricefeed_priceitem" in q["sql"]
    ]
    assert written == []

    assert list(CatalogueEntry.objects.order_by("pk").values_list("pk", "valid_to")) == before
    assert (again.diff["added"], again.diff["removed"], again.diff["changed"]) == (0, 0, 0)
    assert again.accepted_at is not None


def test_a_name_change_is_a_new_version_but_not_a_price_change(mailbox, config):
    send(mailbox, [("A", "Болт", Decimal(10), 1)])
    second = send(mailbox, [("A", "Болт оцинкованный", Decimal(10), 1)])

    assert second.diff["changed"] == 0
    assert [e.name for e in catalogue.sku_history(config.pk, "A")] == [
        "Болт оцинкованный",
        "Болт",
    ]


def test_a_delta_changes_what_it_lists_and_removes_nothing(mailbox, config):
    PriceListConfig.objects.filter(pk=config.pk).update(mode=PriceListConfig.Mode.DELTA)
    send(mailbox, [("A", "Болт", Decimal(10), 1), ("B", "Гайка", Decimal(20), 1)])
    delta = send(mailbox, [("B", "Гайка", Decimal(25), 1), ("C", "Винт", Decimal(5), 1)])

    assert current(config) == {"A": 10, "B": 25, "C": 5}
    assert (delta.diff["added"], delta.diff["removed"], delta.diff["changed"]) == (1, 0, 1)


def test_a_price_that_jumps_beyond_the_configs_share_is_flagged(mailbox, config):
    PriceListConfig.objects.filter(pk=config.pk).update(price_jump_percent=50)
    send(
        mailbox,
        [
            ("A", "Болт", Decimal(100), 1),
            ("B", "Гайка", Decimal(100), 1),
            ("C", "Шайба", Decimal(100), 1),
        ],
    )
    second = send(
        mailbox,
        [
            ("A", "Болт", Decimal(151), 1),
            ("B", "Гайка", Decimal(140), 1),
            ("C", "Шайба", Decimal(40), 1),
        ],
    )

    assert second.diff["changed"] == 3
    assert second.diff["jumps"] == 2
    assert [j["sku"] for j in second.diff["jumps_sample"]] == ["A", "C"]
    assert second.accepted_at is not None  # flagged, not held


def test_an_import_removing_too_much_is_held_until_approved(mailbox, config, admin_client):
    send(mailbox, items(40))
    held = send(mailbox, items(20))  # removes half of the catalogue: over 30 %

    assert held.status == Status.SUCCEEDED
    assert held.review == Review.HELD and held.accepted_at is None
    assert "removes 20 of the 40" in held.review_reason
    assert len(current(config)) == 40  # not current

    page = admin_client.get(f"/admin/pricefeed/priceimport/{held.pk}/change/").content.decode()
    assert "removes 20 of the 40 current items (50%)" in page

    response = admin_client.post(
        "/admin/pricefeed/priceimport/",
        {"action": "approve_held", "_selected_action": [held.pk]},
        follow=True,
    )
    assert response.status_code == 200
    held.refresh_from_db()
    assert held.review == Review.APPROVED and held.accepted_at is not None
    assert held.reviewed_by == "admin"
    assert len(current(config)) == 20


def test_a_rejected_import_never_becomes_current(mailbox, config):
    send(mailbox, items(40))
    held = send(mailbox, items(20))

    catalogue.import_reject(import_id=held.pk, user="operator")

    held.refresh_from_db()
    assert held.review == Review.REJECTED and held.accepted_at is None
    assert len(current(config)) == 40
    with pytest.raises(catalogue.ReviewRefused):
        catalogue.import_approve(import_id=held.pk, user="operator")


def test_a_held_import_cannot_be_approved_once_a_later_list_is_current(mailbox, config):
    send(mailbox, items(40))
    held = send(mailbox, items(20))
    later = send(mailbox, items(40, price=120))
    assert later.accepted_at is not None

    with pytest.raises(catalogue.ReviewRefused, match="already current"):
        catalogue.import_approve(import_id=held.pk, user="operator")
    assert set(current(config).values()) == {120}


def test_a_list_whose_rows_collapse_is_held(mailbox, config):
    PriceListConfig.objects.filter(pk=config.pk).update(hold_removed_percent=100)
    send(mailbox, items(40))
    held = send(mailbox, items(10))

    assert held.review == Review.HELD
    assert "it has 10 items against 40 current (75% fewer)" in held.review_reason


def test_small_catalogues_and_first_lists_are_never_held(mailbox, config):
    first = send(mailbox, items(10))
    assert first.review == ""
    second = send(mailbox, items(1))  # 90 % removed, but the catalogue is small
    assert second.review == "" and len(current(config)) == 1


def test_a_reviewer_needs_the_permission(mailbox, config, client):
    send(mailbox, items(40))
    held = send(mailbox, items(20))
    viewer = User.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(*_permissions("view_priceimport"))
    client.force_login(viewer)

    response = client.post(
        "/admin/pricefeed/priceimport/",
        {"action": "approve_held", "_selected_action": [held.pk]},
    )

    assert response.status_code in (200, 302)
    held.refresh_from_db()
    assert held.review == Review.HELD  # the action is not offered, nothing happened


def test_the_catalogue_list_shows_the_current_rows_as_of_a_moment_and_a_history(
    mailbox, config, admin_client
):
    first = send(mailbox, [("A-1", "Болт", Decimal(10), 1), ("B-1", "Гайка", Decimal(20), 1)])
    send(mailbox, [("A-1", "Болт", Decimal(12), 1), ("B-1", "Гайка", Decimal(20), 1)])
    url = "/admin/pricefeed/catalogueentry/"

    def listed(**params):
        response = admin_client.get(url, params)
        assert response.status_code == 200
        return [(e.sku, e.price) for e in response.context["cl"].result_list]

    assert listed() == [("A-1", 12), ("B-1", 20)]
    assert listed(q="A") == [("A-1", 12)]
    assert listed(as_of=first.accepted_at.isoformat()) == [("A-1", 10), ("B-1", 20)]
    assert listed(as_of="history", sku__exact="A-1") == [("A-1", 12), ("A-1", 10)]


@pytest.mark.django_db(transaction=True)
def test_two_imports_of_one_config_finishing_at_once_take_turns(mailbox, config):
    """Two workers finish imports of the same config at the same moment: the config's
    row lock makes one wait, so the catalogue ends as the later one leaves it, with one
    current entry per SKU."""
    messages = [
        receive(mailbox, [("a.csv", price_list_csv(items(30, price=price)))])
        for price in (100, 200)
    ]
    imports = [m.imports.get() for m in messages]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(price_import: PriceImport) -> None:
        try:
            barrier.wait(timeout=10)
            price_import_run(import_id=price_import.pk, worker=f"w{price_import.pk}")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in imports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    done = PriceImport.objects.filter(pk__in=[i.pk for i in imports]).order_by("accepted_at")
    assert all(i.accepted_at is not None for i in done)
    last = done.last()
    assert last is not None
    entries = catalogue.catalogue_current(config.pk)
    assert entries.count() == 30
    assert {e.price_import_id for e in entries} == {last.pk}


def _permissions(*codenames: str):
    from django.contrib.auth.models import Permission

    return Permission.objects.filter(content_type__app_label="pricefeed", codename__in=codenames)


def test_an_unreadable_row_of_a_partial_import_keeps_its_previous_value(mailbox, config):
    rows = items(25)
    send(mailbox, rows)
    # S-003's price cannot be read, S-004 is gone: only S-004 is removed.
    csv = price_list_csv([r for r in rows if r[0] != "S-004"]).replace(
        "S-003;Товар 3;100,00".encode("cp1251"), "S-003;Товар 3;по запросу".encode("cp1251")
    )
    (partial,) = run_all(receive(mailbox, [("прайс.csv", csv)]))

    assert partial.status == Status.PARTIAL
    assert partial.parse_info["unreadable_skus"] == ["S-003"]
    assert (partial.diff["removed"], partial.diff["unreadable"]) == (1, 1)
    assert partial.diff["unreadable_sample"] == ["S-003"]
    now = current(config)
    assert "S-004" not in now
    assert now["S-003"] == 100  # the previous value stays current


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_a_price_of_zero_or_below_is_a_row_error_unless_the_config_allows_it(mailbox, config, kind):
    from devkit.samples import price_list_xlsx

    rows = [*items(20), ("Z-0", "Бесплатно", Decimal(0), 1), ("N-1", "Возврат", Decimal(-5), 1)]
    make = price_list_csv if kind == "csv" else price_list_xlsx
    (refused,) = run_all(receive(mailbox, [(f"p.{kind}", make(rows))]))

    assert refused.status == Status.PARTIAL
    assert [english(e["error"]) for e in refused.errors] == [
        "price '0' is zero or below (the config does not allow such prices)"
        if kind == "xlsx"
        else "price '0,00' is zero or below (the config does not allow such prices)",
        "price '-5' is zero or below (the config does not allow such prices)"
        if kind == "xlsx"
        else "price '-5,00' is zero or below (the config does not allow such prices)",
    ]

    PriceListConfig.objects.filter(pk=config.pk).update(allow_nonpositive_prices=True)
    (allowed,) = run_all(receive(mailbox, [(f"q.{kind}", make(rows))]))
    assert allowed.status == Status.SUCCEEDED
    assert current(config)["N-1"] == -5


def test_the_outcome_mail_says_an_import_is_held_and_which_prices_jumped(mailbox, config):
    from notifications.services import render_outcome

    send(mailbox, items(40))
    held = send(mailbox, [*items(19), ("S-019", "Товар 19", Decimal(300), 1)])

    _subject, text, html = render_outcome(held, "en")

    assert (
        "held for review, not current yet: it removes 20 of the 40 current items (50%), more "
        "than the 30% allowed. Until an operator approves it, the previous prices stay current."
    ) in text
    assert "1 price changed by more than 50%." in text
    assert "1 price changed by more than 50%." in html


def test_the_catalogue_exports_as_csv_and_xlsx_now_and_as_of(mailbox, config, admin_client):
    import csv
    import io

    first = send(mailbox, [("A-1", "Болт", Decimal(10), 1), ("=B", "Гайка", Decimal(20), 1)])
    send(mailbox, [("A-1", "Болт", Decimal(12), 1), ("=B", "Гайка", Decimal(20), 1)])
    page = admin_client.get(
        f"/admin/pricefeed/catalogueentry/?config__id__exact={config.pk}"
    ).content.decode()
    url = f"/admin/pricefeed/catalogueentry/export/{config.pk}/csv/"
    assert f'href="{url}"' in page

    def rows(response) -> list[list[str]]:
        body = b"".join(response.streaming_content).decode("utf-8-sig")
        return list(csv.reader(io.StringIO(body), delimiter=";"))[1:]

    assert rows(admin_client.get(url)) == [
        ["'=B", "Гайка", "20", "RUB", "1"],
        ["A-1", "Болт", "12", "RUB", "1"],
    ]
    then = admin_client.get(url, {"as_of": first.accepted_at.isoformat()})
    assert rows(then)[1][:3] == ["A-1", "Болт", "10"]

    from openpyxl import load_workbook

    xlsx = admin_client.get(f"/admin/pricefeed/catalogueentry/export/{config.pk}/xlsx/")
    sheet = load_workbook(io.BytesIO(b"".join(xlsx.streaming_content))).active
    assert [c.value for c in sheet[2]][:3] == ["=B", "Гайка", 20]
    assert sheet["A2"].data_type == "s"  # text, not a formula


def test_the_list_of_every_config_offers_each_configs_export(mailbox, config, admin_client):
    import html
    import re

    from tests.factories import create_config

    other = create_config(mailbox, name="Другой поставщик", filename_pattern="*.xlsx")
    send(mailbox, [("A-1", "Болт", Decimal(10), 1)])
    page = admin_client.get("/admin/pricefeed/catalogueentry/").content.decode()
    form = page[page.index('id="catalogue-export"') :]
    form = form[: form.index("</form>")]
    options = re.findall(r'<option value="(\d+)">([^<]*)</option>', form)
    assert [(int(pk), html.unescape(name)) for pk, name in options] == sorted(
        [(config.pk, config.name), (other.pk, other.name)], key=lambda option: option[1]
    )
    assert re.findall(r'name="file_format" value="([^"]+)"', form) == ["csv", "csv-comma", "xlsx"]

    chosen = admin_client.get(
        "/admin/pricefeed/catalogueentry/export/",
        {"config": config.pk, "file_format": "xlsx", "as_of": "2026-12-01T10:00:00"},
    )
    assert chosen.status_code == 302
    assert chosen["Location"] == (
        f"/admin/pricefeed/catalogueentry/export/{config.pk}/xlsx/?as_of=2026-12-01T10%3A00%3A00"
    )
    csv_export = admin_client.get(
        "/admin/pricefeed/catalogueentry/export/",
        {"config": config.pk, "file_format": "csv"},
        follow=True,
    )
    body = b"".join(csv_export.streaming_content).decode("utf-8-sig")
    assert "A-1;Болт;10" in body
    for wrong in (
        {"config": "x", "file_format": "csv"},
        {"config": config.pk, "file_format": "pdf"},
    ):
        assert admin_client.get("/admin/pricefeed/catalogueentry/export/", wrong).status_code == 404


def test_the_export_choice_needs_the_catalogues_view_permission(client, config):
    user = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(user)
    response = client.get(
        "/admin/pricefeed/catalogueentry/export/", {"config": config.pk, "file_format": "csv"}
    )
    assert response.status_code == 403


def test_an_xlsx_export_past_the_limit_says_to_use_csv(mailbox, config, admin_client, settings):
    settings.PRICEFEED_EXPORT_XLSX_MAX_ROWS = 10
    send(mailbox, items(11))

    response = admin_client.get(
        f"/admin/pricefeed/catalogueentry/export/{config.pk}/xlsx/", follow=True
    )

    assert response.redirect_chain[0][0].endswith(f"?config__id__exact={config.pk}")
    assert "11 rows are more than an xlsx export holds (10" in response.content.decode()
