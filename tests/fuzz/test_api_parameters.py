"""Every API parameter, fuzzed: whatever a client puts in a path, a query parameter or
a cursor, the API answers 2xx or 4xx, never 500 (a 500 mails ADMINS, unthrottled).

Schemathesis generates requests from the project's own OpenAPI schema (drf-spectacular),
sent through Django's test client (in the test's transaction, as the WSGI handler
would run them, without its closing the connection after each); a Hypothesis property crafts cursors
(base64 of ``o=…&r=…&p=…``, as DRF writes them) with positions of every kind against
each list, over real rows."""

from __future__ import annotations

import json
from base64 import b64encode
from decimal import Decimal
from urllib.parse import urlencode

import pytest
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from api.tokens import token_create
from devkit.samples import price_list_csv
from products.models import Product, SupplierLink
from tests.api.conftest import EVERYTHING, user_with
from tests.factories import create_config, create_mailbox, receive, run_all


def openapi_schema() -> dict:
    """The schema /api/schema/ serves, made without a request."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(schema))


SCHEMA = schemathesis.openapi.from_dict(openapi_schema())
# A bounded, repeatable run: the profile's derandomize, fewer examples per operation.
FEW = settings(
    max_examples=30,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
LISTS = (
    "/api/configs/",
    "/api/imports/",
    "/api/imports/{import_id}/items/",
    "/api/configs/{config_id}/catalogue/",
    "/api/configs/{config_id}/history/?sku=S-001",
    "/api/configs/{config_id}/changes/?since=2000-01-01T00:00:00Z",
    "/api/configs/{config_id}/unlinked/",
    "/api/products/",
    "/api/products/{product_id}/offers/",
)


@pytest.fixture
def signed_in(db, no_queue):
    """A reader's token header, and a config with an import of a few rows (so that ids
    1, 2, … of the generated paths can find something)."""
    mailbox = create_mailbox()
    config = create_config(mailbox)
    rows = [(f"S-{i:03}", f"Товар {i}", Decimal(100 + i), i) for i in range(5)]
    (price_import,) = run_all(receive(mailbox, [("прайс.csv", price_list_csv(rows))]))
    _, key = token_create(user=user_with("erp", EVERYTHING), name="fuzz")
    return {"Authorization": f"Token {key}"}, config, price_import


@SCHEMA.parametrize()
@FEW
def test_no_generated_request_is_a_server_error(case, client, signed_in):
    headers, _config, _import = signed_in
    response = client.generic(
        case.method, case.formatted_path + query_string(case.query), headers=headers
    )
    assert response.status_code < 500, (case.formatted_path, case.query)


def query_string(query: dict | None) -> str:
    return "?" + urlencode(query, doseq=True) if query else ""


def cursor(offset: int, reverse: int, position: str) -> str:
    return b64encode(urlencode({"o": offset, "r": reverse, "p": position}).encode()).decode()


POSITIONS = st.one_of(
    st.text(max_size=40),
    st.integers().map(str),
    st.floats().map(str),
    st.datetimes().map(lambda moment: moment.isoformat()),
    st.sampled_from(["abc", "1e400", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00",
                     "99999999999999999999", "-1", "", "\x00", "S-001"]),
)  # fmt: skip


@given(
    list_path=st.sampled_from(LISTS),
    offset=st.integers(min_value=0, max_value=10**6),
    reverse=st.sampled_from([0, 1]),
    position=POSITIONS,
)
@FEW
@example(list_path=LISTS[1], offset=0, reverse=0, position="abc")
@example(list_path=LISTS[2], offset=0, reverse=0, position="1e400")
@example(list_path=LISTS[4], offset=0, reverse=0, position="0001-01-01T00:00:00+14:00")
@example(list_path=LISTS[0], offset=0, reverse=1, position="99999999999999999999")
@example(list_path=LISTS[7], offset=0, reverse=0, position="\x00")
@example(list_path=LISTS[4], offset=0, reverse=0, position="0001-01-02T00:00:00")
def test_a_crafted_cursor_is_a_404_never_a_server_error(
    client, signed_in, list_path, offset, reverse, position
):
    headers, config, price_import = signed_in
    path = list_path.format(
        config_id=config.pk, import_id=price_import.pk, product_id=signed_in_product(config)
    )
    joiner = "&" if "?" in path else "?"
    url = f"{path}{joiner}cursor={cursor(offset, reverse, position)}"

    response = client.get(url, headers=headers)

    assert response.status_code in (200, 404), (url, response.content[:300])


def signed_in_product(config) -> int:
    """A product of ours linked to the config's first SKU (made once per example)."""
    product, _ = Product.objects.get_or_create(own_code="P-001", defaults={"name": "Товар 1"})
    SupplierLink.objects.get_or_create(
        config=config,
        supplier_sku="S-001",
        defaults={"product": product, "kind": "manual", "confidence": 1, "state": "confirmed"},
    )
    return product.pk


@pytest.mark.parametrize("raw", ["abc", "1e400", "cD1hYmM"])
def test_a_cursor_that_does_not_decode_is_a_404(client, signed_in, raw):
    headers, _config, _import = signed_in
    assert client.get(f"/api/imports/?cursor={raw}", headers=headers).status_code == 404
