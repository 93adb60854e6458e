"""The admin in a real browser, served as in production (gunicorn, DEBUG off, static
files collected and served by WhiteNoise): its JavaScript loads and works."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from mailboxes.models import Mailbox
from pricefeed.models import PriceListConfig
from tests.factories import create_mailbox
from tests.requirements import require_chromium

from .support import ROOT, Gunicorn, admin_over_plain_http, unit_command

pytestmark = pytest.mark.integration

# Debian's Chromium (Playwright downloads no browser here).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "browser-test-password-42"


def test_adding_a_config_inline_with_the_admins_javascript_saves_it(transactional_db, tmp_path):
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    env = admin_over_plain_http(tmp_path)
    get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    # An address the IMAP policy of the test environment allows (loopback, plain).
    mailbox = create_mailbox(host="127.0.0.1", port=143, security=Mailbox.Security.PLAIN)
    venv = Path(sys.executable).parent.parent

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    change = f"/admin/mailboxes/mailbox/{mailbox.pk}/change/"
    # Nothing touches the database inside this block: Playwright's event loop runs in
    # this thread, where Django would refuse synchronous queries.
    # From the source tree, as the other processes the tests start.
    with Gunicorn(command, env, ROOT, tmp_path) as server, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=browser,
            headless=True,
            args=CHROMIUM_ARGS,
        )
        try:
            page = context.new_page()
            page.goto(f"{server.url}/admin/login/?next={change}")
            page.fill("#id_username", "admin")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url(f"**{change}")
            forms = int(page.input_value("#id_configs-TOTAL_FORMS"))
            # Rendered by admin's inlines.js: present only when its JavaScript loaded.
            page.click("text=Add another Price-list config")
            row = f"#id_configs-{forms}"
            page.fill(f"{row}-name", "Browser supplier")
            page.fill(f"{row}-sender_pattern", "*@browser.test")
            page.fill(f"{row}-filename_pattern", "*.csv")
            page.click("input[name=_save]")
            page.wait_for_url("**/admin/mailboxes/mailbox/")
            saved = page.locator(".messagelist").inner_text()
        finally:
            context.close()

    assert "was changed successfully" in saved
    config = PriceListConfig.objects.get(mailbox=mailbox, name="Browser supplier")
    assert (config.sender_pattern, config.filename_pattern) == ("*@browser.test", "*.csv")
    assert server.returncode == 0, server.log()[-3000:]
