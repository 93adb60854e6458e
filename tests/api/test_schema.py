"""The OpenAPI 3 schema at /api/schema/ and its reference page at /api/docs/, which
fetches nothing from the internet and speaks the reader's language."""

from __future__ import annotations

import re

import yaml
from django.core.management import call_command
from rest_framework.test import APIClient


def test_the_schema_is_valid_openapi_3_without_warnings(tmp_path):
    path = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))
    schema = yaml.safe_load(path.read_text())
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path_name in (
        "/api/configs/",
        "/api/imports/",
        "/api/imports/{import_id}/items/",
        "/api/configs/{config_id}/catalogue/",
        "/api/configs/{config_id}/history/",
        "/api/configs/{config_id}/changes/",
        "/api/configs/{config_id}/unlinked/",
        "/api/products/",
        "/api/products/{id}/",
        "/api/products/{product_id}/offers/",
    ):
        assert set(paths[path_name]) == {"get"}, path_name
    catalogue = paths["/api/configs/{config_id}/catalogue/"]["get"]
    assert {p["name"] for p in catalogue["parameters"]} >= {"as_of", "sku", "search", "cursor"}
    products = paths["/api/products/"]["get"]
    assert {p["name"] for p in products["parameters"]} >= {
        "own_code", "brand", "active", "updated_since", "cursor"
    }  # fmt: skip
    offer = schema["components"]["schemas"]["Offer"]["properties"]
    assert offer["price"]["format"] == "decimal" and offer["price"]["nullable"]
    entry = schema["components"]["schemas"]["Entry"]["properties"]
    assert entry["price"]["type"] == "string" and entry["price"]["format"] == "decimal"
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_the_schema_is_served_to_a_signed_in_user_only(api, reader):
    assert APIClient().get("/api/schema/").status_code == 401
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "pricefeed API"


def test_the_reference_page_loads_only_local_files(reader):
    person = APIClient()
    person.force_login(reader)
    response = person.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    sources = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']+)', html)
    assert any("admin/css/base" in s for s in sources), sources
    external = [s for s in sources if "://" in s or s.startswith("//") or "cdn" in s]
    assert not external
    assert "cdn" not in html.lower() and "https://" not in html


def test_the_reference_page_lists_every_operation_in_the_readers_language(reader):
    person = APIClient()
    person.force_login(reader)
    russian = person.get("/api/docs/", HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    english = person.get("/api/docs/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="ru"' in russian and '<html lang="en"' in english
    for path in ("/api/configs/", "/api/configs/{config_id}/changes/"):
        assert path in russian
    assert "Fields of the answer" in english and "Fields of the answer" not in russian
    assert "A SKU&#x27;s history" in english and "История артикула" in russian


def test_the_reference_page_sends_a_visitor_to_sign_in():
    response = APIClient().get("/api/docs/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
