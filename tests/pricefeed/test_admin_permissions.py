"""Who may run failed imports again and preview a file: each role's group, and a staff
user in none. A refused action is neither offered nor run when POSTed."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from access.roles import OPERATOR
from devkit.samples import price_list_csv
from pricefeed.models import PriceImport
from tests.access.support import at_least, each_role, logged_in, offered, run_action
from tests.factories import ROWS, receive, run_all
from tests.pricefeed.test_admin_imports import config_post

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_queue")]

Status = PriceImport.Status
IMPORTS = reverse("admin:pricefeed_priceimport_changelist")


@pytest.fixture
def failed_import(mailbox, config) -> PriceImport:
    message = receive(mailbox, [("price.pdf", b"%PDF-1.7 not a price list")])
    (price_import,) = run_all(message)
    assert price_import.status == Status.FAILED
    return price_import


@each_role
def test_rerun_failed_is_an_operators(client, role, failed_import):
    client = logged_in(client, role)
    allowed = at_least(role, OPERATOR)

    assert ("rerun_failed" in offered(client, IMPORTS)) == allowed
    run_action(client, IMPORTS, "rerun_failed", failed_import.pk)

    failed_import.refresh_from_db()
    assert failed_import.status == (Status.PENDING if allowed else Status.FAILED)


@each_role
def test_preview_is_an_operators(client, role, config):
    # Reading an upload costs the server CPU and memory (issue 30): not a viewer's.
    client = logged_in(client, role)
    url = reverse("admin:pricefeed_pricelistconfig_preview", args=[config.pk])

    response = client.post(url, {"file": SimpleUploadedFile("p.csv", price_list_csv(ROWS))})

    if at_least(role, OPERATOR):
        assert response.status_code == 200
        assert response.context["results"]
    else:
        assert response.status_code == 403
    # Offered on the config's page to whoever may run it, to nobody else.
    page = client.get(reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk]))
    assert (url in page.content.decode()) == at_least(role, OPERATOR)


@each_role
def test_configs_are_edited_by_operators(client, role, config):
    client = logged_in(client, role)
    url = reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk])

    response = client.post(url, config_post(config, name="Опт"))

    allowed = at_least(role, OPERATOR)
    assert response.status_code == (302 if allowed else 403)
    config.refresh_from_db()
    assert (config.name == "Опт") is allowed
