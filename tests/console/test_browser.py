"""The front page in a real browser (Debian's Chromium through Playwright): it fits the
window without scrolling sideways, its charts are drawn, and a failed import and a
failed notification are each two clicks from it. Screenshots go to
var/test-artifacts/console/."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.console.test_dashboard import Installation
from tests.requirements import require_chromium

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts" / "console"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
PASSWORD = "front-page-password-42"


@pytest.mark.parametrize("language", ["ru", "en"])
@pytest.mark.parametrize("width", [1440, 1920])
def test_the_front_page_fits_the_window_and_trouble_is_two_clicks_away(
    live_server, transactional_db, tmp_path, width, language
):
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    Installation()
    User.objects.create_superuser("admin", "admin@example.com", PASSWORD)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # Nothing touches the database inside this block: Playwright's event loop runs in
    # this thread, where Django would refuse synchronous queries.
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=browser,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": width, "height": 900},
            locale=language,  # Accept-Language: the admin answers in it
        )
        try:
            page = context.new_page()
            page.goto(f"{live_server.url}/admin/login/?next=/admin/")
            page.fill("#id_username", "admin")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/")
            assert page.locator("html").get_attribute("lang") == language
            page.screenshot(path=ARTIFACTS / f"front-page-{language}-{width}.png", full_page=True)

            sideways = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert sideways <= 0, f"the page scrolls {sideways} px sideways at {width} px"
            assert page.locator("#chart-imports svg rect.pf-failed").count() == 1
            assert page.locator("#chart-latency svg circle").count() == 2
            assert page.locator(".pf-apps .app-mailboxes").count() == 1  # the app list stays

            # A failed import: its count, then its row.
            page.locator("#tile-imports .pf-row-failed td a").first.click()
            page.wait_for_url("**/pricefeed/priceimport/?**")
            rows = page.locator("#result_list tbody tr")
            assert rows.count() == 1
            rows.first.locator("a[href*='/change/']").first.click()
            page.wait_for_url("**/pricefeed/priceimport/*/change/**")

            # A failed notification, the same way.
            page.goto(f"{live_server.url}/admin/")
            page.locator("#tile-notifications .pf-row-failed td a").first.click()
            page.wait_for_url("**/notifications/notification/?**")
            rows = page.locator("#result_list tbody tr")
            assert rows.count() == 2
            rows.first.locator("a[href*='/change/']").first.click()
            page.wait_for_url("**/notifications/notification/*/change/**")
        finally:
            context.close()
