"""The review queue and the supplier links in the admin, through the test client: what
each role sees and may do (a viewer looks, an operator decides), every decision as the
page's plain forms post it, the links' list and a link's history."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from access.roles import ADMINISTRATOR, OPERATOR, VIEWER
from products.models import LinkEvent, Product, SupplierLink
from tests.access.support import staff

from .review_data import Queue, two_suppliers

pytestmark = pytest.mark.django_db
State = SupplierLink.State
QUEUE = "admin:products_supplierlink_review"
NEW = "admin:products_supplierlink_review_new"
RU = {"HTTP_ACCEPT_LANGUAGE": "ru"}


@pytest.fixture
def queue(mailbox) -> Queue:
    return two_suppliers(mailbox)


def as_role(client, role: str | None) -> User:
    user = staff(role)
    client.force_login(user)
    return user


def text(response) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def decide(client, queue: Queue, sku: str, headers=None, **fields):
    config = queue.north if sku.startswith("N") else queue.south
    url = reverse(QUEUE)
    data = {"config": config.pk, "sku": sku, "next": f"{url}?config={config.pk}", **fields}
    return client.post(url, data, **(headers or {}))


# -- who sees, who decides -------------------------------------------------------------


@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMINISTRATOR])
def test_every_role_sees_the_queue_and_only_those_who_review_get_its_buttons(client, queue, role):
    as_role(client, role)

    response = client.get(reverse(QUEUE))

    assert response.status_code == 200
    page = response.content.decode()
    assert "N-1" in page and "S-2" in page
    decides = role != VIEWER
    assert ('value="confirm"' in page) is decides
    assert ('name="bulk"' in page) is decides
    assert (reverse(NEW) in page) is decides


def test_a_staff_user_in_no_role_is_refused_the_queue(client, queue):
    as_role(client, None)

    assert client.get(reverse(QUEUE)).status_code == 403


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "confirm", "product": 0},
        {"action": "reject", "product": 0},
        {"choose": 0},
        {"action": "code", "own_code": "П-0004"},
        {"bulk": "1", "proposal": "0"},
    ],
    ids=["confirm", "reject", "choose", "code", "bulk"],
)
def test_a_viewer_cannot_decide_anything(client, queue, fields):
    as_role(client, VIEWER)
    fields = {k: v if v != 0 else queue.products["bolt"].pk for k, v in fields.items()}
    if "proposal" in fields:
        fields["proposal"] = f"{queue.links['N-1'].pk}:{queue.products['bolt'].pk}"

    response = decide(client, queue, "N-1", **fields)

    assert response.status_code == 403
    assert SupplierLink.objects.get(pk=queue.links["N-1"].pk).state == State.PROPOSED
    assert not LinkEvent.objects.exists()


def test_a_viewer_cannot_open_or_post_the_new_product_page(client, queue):
    as_role(client, VIEWER)
    query = {"config": queue.north.pk, "sku": "N-5"}

    assert client.get(reverse(NEW), query).status_code == 403
    assert client.post(reverse(NEW), {**query, "own_code": "X", "name": "X"}).status_code == 403
    assert not Product.objects.filter(own_code="X").exists()


def test_reviewing_without_adding_products_is_refused_the_new_product_page(client, queue):
    user = staff(None)
    user.user_permissions.add(
        Permission.objects.get(codename="review_supplierlink"),
        Permission.objects.get(codename="view_supplierlink"),
    )
    client.force_login(user)

    assert client.get(reverse(QUEUE)).status_code == 200
    assert client.get(reverse(NEW), {"config": queue.north.pk, "sku": "N-5"}).status_code == 403
    page = client.get(reverse(QUEUE)).content.decode()
    assert 'value="confirm"' in page and reverse(NEW) not in page


def test_a_filter_the_queue_cannot_read_is_a_bad_request(client, queue):
    as_role(client, VIEWER)

    assert client.get(reverse(QUEUE), {"config": "x"}).status_code == 400
    assert client.get(reverse(QUEUE), {"show": "bogus"}).status_code == 400


# -- the operator's decisions ---------------------------------------------------------


def test_an_operator_confirms_a_proposed_link_and_returns_to_the_page(client, queue):
    operator = as_role(client, OPERATOR)
    bolt = queue.products["bolt"]

    response = decide(client, queue, "N-1", action="confirm", product=bolt.pk)

    assert response.status_code == 302
    assert response.url == f"{reverse(QUEUE)}?config={queue.north.pk}"
    link = SupplierLink.objects.get(pk=queue.links["N-1"].pk)
    assert (link.state, link.confirmed_by) == (State.CONFIRMED, operator)
    assert LinkEvent.objects.get(link=link).user == operator


def test_an_operator_rejects_a_proposal(client, queue):
    as_role(client, OPERATOR)

    decide(client, queue, "N-2", action="reject", product=queue.products["nut"].pk)

    assert SupplierLink.objects.get(pk=queue.links["N-2"].pk).state == State.REJECTED


def test_an_operator_chooses_a_candidate_or_any_product_by_its_code(client, queue):
    as_role(client, OPERATOR)

    decide(client, queue, "N-3", choose=queue.products["grower"].pk)
    decide(client, queue, "S-2", action="code", own_code="П-0004")

    links = SupplierLink.objects.filter(state=State.CONFIRMED, kind=SupplierLink.Kind.MANUAL)
    assert set(links.values_list("supplier_sku", "product__own_code")) == {
        ("N-3", "П-0005"),
        ("S-2", "П-0004"),
    }


def test_a_stale_or_unknown_decision_is_said_and_changes_nothing(client, queue):
    as_role(client, OPERATOR)

    stale = decide(client, queue, "N-1", RU, action="confirm", product=queue.products["bolt50"].pk)
    unknown = decide(client, queue, "N-3", RU, action="code", own_code="НЕТ-ТАКОГО")

    assert stale.status_code == unknown.status_code == 302
    assert not LinkEvent.objects.exists()
    page = text(client.get(stale.url, **RU))
    assert "Связь N-1 изменилась после того, как страница была показана" in page
    assert "Товара НЕТ-ТАКОГО нет или он выведен из ассортимента" in page


def test_bulk_confirms_the_proposed_links_of_the_page(client, queue):
    as_role(client, OPERATOR)
    page = client.get(reverse(QUEUE), {"config": queue.north.pk})
    proposals = page.context["proposals"]
    assert {link_id for link_id, _product in proposals} == {
        queue.links["N-1"].pk,
        queue.links["N-2"].pk,
    }

    response = client.post(
        reverse(QUEUE),
        {
            "bulk": "1",
            "proposal": [f"{link_id}:{product_id}" for link_id, product_id in proposals],
            "next": f"{reverse(QUEUE)}?config={queue.north.pk}",
        },
    )

    assert response.status_code == 302
    states = dict(SupplierLink.objects.values_list("supplier_sku", "state"))
    assert states["N-1"] == states["N-2"] == State.CONFIRMED
    assert states["S-1"] == State.PROPOSED  # another config's page


def test_the_new_product_page_is_prefilled_from_the_line_and_adds_and_links(client, queue):
    as_role(client, OPERATOR)
    query = {"config": queue.north.pk, "sku": "N-1"}

    form = client.get(reverse(NEW), query).context["form"]
    assert form.initial == {
        "name": "Болт М8х40 оцинк.",
        "brand": "Крепыш",
        "article": "DIN933-M8x40",
        "barcodes": "4601234567893",
        "unit": "",
        "category": "",
    }
    response = client.post(
        reverse(NEW),
        {
            **query,
            "own_code": "П-0200",
            "name": "Болт М8х40 оцинкованный",
            "brand": "Крепыш",
            "article": "DIN933-M8x40",
            "barcodes": "4601234567893, 4601234567893",
            "unit": "шт",
            "next": reverse(QUEUE),
        },
    )

    assert response.status_code == 302 and response.url == reverse(QUEUE)
    product = Product.objects.get(own_code="П-0200")
    assert product.barcodes == ["4601234567893"]
    link = SupplierLink.objects.get(config=queue.north, supplier_sku="N-1")
    assert (link.product, link.state, link.kind) == (product, State.CONFIRMED, "manual")


def test_the_new_product_form_refuses_a_taken_code_and_a_wrong_barcode(client, queue):
    as_role(client, OPERATOR)

    response = client.post(
        reverse(NEW),
        {
            "config": queue.north.pk,
            "sku": "N-5",
            "own_code": "П-0001",
            "name": "Сверло",
            "barcodes": "4601234567890",
        },
        **RU,
    )

    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"own_code", "barcodes"}
    assert "Неверный штрихкод: 4601234567890" in text(response)
    assert not SupplierLink.objects.filter(supplier_sku="N-5").exists()


def test_the_new_product_page_is_for_a_current_line_only(client, queue):
    as_role(client, OPERATOR)

    assert client.get(reverse(NEW), {"config": queue.north.pk, "sku": "S-1"}).status_code == 404
    assert client.get(reverse(NEW), {"config": "x", "sku": "N-1"}).status_code == 404


def test_a_decision_returns_only_to_the_queue_itself(client, queue):
    as_role(client, OPERATOR)

    response = decide(client, queue, "N-3", choose=queue.products["washer"].pk, next="//evil.test/")

    assert response.url == reverse(QUEUE)


def test_the_any_product_field_suggests_products_by_code_or_name(client, queue):
    as_role(client, VIEWER)
    url = reverse("admin:products_supplierlink_review_products")

    by_code = client.get(url, {"q": "П-000"}).json()["results"]
    by_name = client.get(url, {"q": "гровер"}).json()["results"]

    assert len(by_code) == 6
    assert by_name == [{"own_code": "П-0005", "name": "Шайба гровер 8"}]
    assert client.get(url, {"q": "П"}).json() == {"results": []}


# -- what the page shows ---------------------------------------------------------------


def test_the_queue_in_russian_shows_candidates_side_by_side_with_what_differed(client, queue):
    as_role(client, OPERATOR)

    response = client.get(reverse(QUEUE), {"config": queue.north.pk}, **RU)

    page = text(response)
    assert "Очередь проверки связей" in page
    assert "размер: M8x40 ≠ M8x50" in page
    assert "Подтвердить Enter" in page and "Отклонить r" in page
    html = response.content.decode()
    # The article of the proposed bolt matched (the matching said so), the nut's line
    # and product agree on brand by plain comparison.
    assert 'class="pf-match">DIN933-M8x40<' in html
    assert [line["item"].sku for line in response.context["lines"]] == ["N-1", "N-2", "N-3", "N-5"]


def test_the_proposed_product_is_shown_even_when_no_candidate_names_it(client, queue):
    as_role(client, OPERATOR)

    response = client.get(reverse(QUEUE), {"config": queue.north.pk, "show": "proposed"})

    lines = {line["item"].sku: line for line in response.context["lines"]}
    nut = [(row["product"].own_code, row["proposed"], row["key"]) for row in lines["N-2"]["rows"]]
    assert nut == [("П-0003", True, None)]  # confirmed with Enter; no number to choose it
    bolt = [(row["product"].own_code, row["key"]) for row in lines["N-1"]["rows"]]
    assert bolt == [("П-0001", None), ("П-0002", 1)]


# -- the links' list and a link's page -------------------------------------------------


def test_the_links_list_filters_and_searches_and_a_links_page_shows_its_history(client, queue):
    as_role(client, OPERATOR)
    decide(client, queue, "N-1", action="confirm", product=queue.products["bolt"].pk)
    url = reverse("admin:products_supplierlink_changelist")

    confirmed = client.get(url, {"state__exact": "confirmed"}, **RU)
    found = client.get(url, {"q": "П-0001"}, **RU)
    page = client.get(
        reverse("admin:products_supplierlink_change", args=[queue.links["N-1"].pk]), **RU
    )

    assert [link.supplier_sku for link in confirmed.context["cl"].result_list] == ["N-1"]
    assert {link.supplier_sku for link in found.context["cl"].result_list} == {"N-1", "S-1"}
    assert "Очередь проверки" in text(confirmed)
    history = text(page)
    assert "staff-operator" in history and "подтверждена" in history


def test_the_links_list_actions_confirm_and_reject_for_an_operator(client, queue):
    as_role(client, OPERATOR)
    url = reverse("admin:products_supplierlink_changelist")

    client.post(url, {"action": "confirm_selected", "_selected_action": [queue.links["N-1"].pk]})
    client.post(url, {"action": "reject_selected", "_selected_action": [queue.links["S-1"].pk]})

    states = dict(SupplierLink.objects.values_list("supplier_sku", "state"))
    assert (states["N-1"], states["S-1"]) == (State.CONFIRMED, State.REJECTED)
    assert LinkEvent.objects.count() == 2
