"""The review queue in a real browser (Debian's Chromium), in Russian, served as in
production (gunicorn, DEBUG off, static files collected): an operator confirms a
proposed link with the keyboard, makes a product of ours from an unlinked line, confirms
every proposed link of a page at once, and opens the products' admin pages."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from django.apps import apps as global_apps
from django.contrib.auth.models import Group, User
from django.db import DEFAULT_DB_ALIAS
from django.urls import reverse

from access.roles import OPERATOR, roles_apply
from products.models import LinkEvent, Product, SupplierLink
from tests.factories import create_mailbox
from tests.products.review_data import two_suppliers
from tests.requirements import require_chromium

from .support import ROOT, Gunicorn, admin_over_plain_http, unit_command
from .test_admin_browser import CHROMIUM_ARGS, PASSWORD

pytestmark = pytest.mark.integration

ARTIFACTS = ROOT / "var" / "test-artifacts" / "review"
# Generous: a page of the admin under a loaded CI machine.
WAIT_MS = 60_000


def assert_product_page_shows_both_suppliers_offers(text: str, *, suppliers: tuple[str, str]):
    """The page of our bolt (П-0001), linked to a line of each of ``suppliers`` (config
    names: N-1 of Север, S-1 of Юг), as the browser shows it (``text``): each supplier's
    offer, 10,00 RUB and 5 in stock."""
    assert "П-0001" in text
    assert "Предложения поставщиков" in text
    for supplier, sku in zip(suppliers, ("N-1", "S-1"), strict=True):
        assert re.search(rf"{supplier}\s+{sku}\s+10,00\s+RUB\s+5\b", text), text


def test_an_operator_reviews_links_in_russian_with_the_keyboard_and_the_bulk_button(
    transactional_db, tmp_path
):
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    env = admin_over_plain_http(tmp_path)
    roles_apply(apps=global_apps, using=DEFAULT_DB_ALIAS)  # the test database was flushed
    operator = User.objects.create_user("operator", password=PASSWORD, is_staff=True)
    operator.groups.add(Group.objects.get(name=OPERATOR))
    queue = two_suppliers(create_mailbox())
    north = queue.north.pk
    review = reverse("admin:products_supplierlink_review")
    links = reverse("admin:products_supplierlink_changelist")
    venv = Path(sys.executable).parent.parent
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    said: dict[str, str] = {}
    # No database access in here: Playwright's loop runs in this thread.
    with Gunicorn(command, env, ROOT, tmp_path) as server, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=browser,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 900},
            locale="ru",
        )
        context.set_default_timeout(WAIT_MS)
        try:
            page = context.new_page()
            page.goto(f"{server.url}/admin/login/?next={review}?config={north}")
            page.fill("#id_username", "operator")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_selector(".pf-review-line.pf-review-current")
            said["queue"] = page.inner_text("#content")
            said["lang"] = page.locator("html").get_attribute("lang") or ""
            page.screenshot(path=str(ARTIFACTS / "queue-ru.png"), full_page=True)

            # Enter: the first line's proposed product (N-1, our bolt) is confirmed.
            with page.expect_navigation():
                page.keyboard.press("Enter")
            said["confirmed"] = page.inner_text(".messagelist")

            # j, j, n: the third line now (N-5, a drill we do not carry) becomes a new
            # product of ours, prefilled from the line; its own code is asked.
            page.wait_for_selector(".pf-review-line.pf-review-current")
            page.keyboard.press("j")
            page.keyboard.press("j")
            with page.expect_navigation():
                page.keyboard.press("n")
            said["new form name"] = page.input_value("#id_name")
            page.fill("#id_own_code", "П-0300")
            with page.expect_navigation():
                page.click("#pf-new-product input[type=submit]")
            said["created"] = page.inner_text(".messagelist")

            # Every config: the two proposals left (N-2, S-1) confirmed at once.
            page.goto(f"{server.url}{review}")
            with page.expect_navigation():
                page.click("#pf-review-bulk")
            said["bulk"] = page.inner_text(".messagelist")
            said["after bulk"] = page.inner_text("#content")

            # The bolt's links (both suppliers now), and the bolt's own page.
            page.goto(f"{server.url}{links}?q=П-0001")
            said["links"] = page.inner_text("#result_list")
            page.click("#result_list tbody tr:first-child th a")
            said["link page"] = page.inner_text("#content")
            page.click(".field-product_link a")
            said["bolt page"] = page.inner_text("#content")
            page.screenshot(path=str(ARTIFACTS / "bolt-ru.png"), full_page=True)

            # The product made from the line, through its link.
            page.goto(f"{server.url}{links}?q=П-0300")
            page.click("#result_list tbody tr:first-child th a")
            page.click(".field-product_link a")
            said["new product page"] = page.inner_text("#content")
        finally:
            context.close()

    assert said["lang"] == "ru"
    assert "Очередь проверки связей с товарами" in said["queue"]
    assert "Клавиши:" in said["queue"] and "размер: M8x40 ≠ M8x50" in said["queue"]
    assert "Подтверждено: N-1 — это П-0001 Болт М8х40." in said["confirmed"]
    assert said["new form name"] == "Сверло по бетону 6х110"
    assert "Добавлен наш товар П-0300 Сверло по бетону 6х110, с ним связан N-5." in said["created"]
    assert "Подтверждено 2 связи." in said["bulk"]
    assert "Проверять нечего" not in said["after bulk"]  # N-3, S-2 wait, unlinked
    assert "N-1" in said["links"] and "S-1" in said["links"]
    assert "история" in said["link page"].lower() and "operator" in said["link page"]
    assert_product_page_shows_both_suppliers_offers(said["bolt page"], suppliers=("Север", "Юг"))
    assert "П-0300" in said["new product page"]

    states = dict(SupplierLink.objects.values_list("supplier_sku", "state"))
    assert states == {
        "N-1": "confirmed",
        "N-2": "confirmed",
        "S-1": "confirmed",
        "N-4": "auto",
        "N-5": "confirmed",
    }
    drill = Product.objects.get(own_code="П-0300")
    assert (drill.brand, drill.article) == ("Бурмаш", "SB-6110")
    assert set(LinkEvent.objects.values_list("user__username", flat=True)) == {"operator"}
    assert LinkEvent.objects.count() == 4
    assert server.returncode == 0, server.log()[-3000:]
