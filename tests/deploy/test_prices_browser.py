"""Our prices in a real browser (Debian's Chromium), in Russian, served as in production
(gunicorn, DEBUG off): an operator changes a price rule and the price follows, its page
explains how it was made, and a price that moved too far is approved from the list."""

from __future__ import annotations

import sys
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from django.apps import apps as global_apps
from django.contrib.auth.models import Group, User
from django.db import DEFAULT_DB_ALIAS, connections
from django.urls import reverse

from access.roles import OPERATOR, roles_apply
from pricing import offers
from pricing.models import PriceRule, ProductPrice
from tests.factories import deliver_everything
from tests.pricing.test_offers import make_world
from tests.requirements import require_chromium

from .support import ROOT, Gunicorn, admin_over_plain_http, unit_command
from .test_admin_browser import CHROMIUM_ARGS, PASSWORD

pytestmark = pytest.mark.integration

ARTIFACTS = ROOT / "var" / "test-artifacts" / "prices"
WAIT_MS = 60_000


def outbox_run() -> None:
    """What dispatch_outbox and a worker do with the refresh a saved rule asked for, in a
    thread of its own (Playwright's loop owns this one: Django refuses it the database)."""

    def run() -> None:
        try:
            deliver_everything()
        finally:
            connections.close_all()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()


def test_an_operator_changes_a_rule_reads_the_audit_and_approves_a_held_price(
    transactional_db, tmp_path, no_queue
):
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    env = admin_over_plain_http(tmp_path)
    roles_apply(apps=global_apps, using=DEFAULT_DB_ALIAS)  # the test database was flushed
    operator = User.objects.create_user("operator", password=PASSWORD, is_staff=True)
    operator.groups.add(Group.objects.get(name=OPERATOR))
    world = make_world()
    offers.offers_refresh([world.bolt.pk, world.nut.pk])
    assert ProductPrice.objects.get(product=world.bolt).price == Decimal("1157.00")
    rule = PriceRule.objects.get()
    rule_page = reverse("admin:pricing_pricerule_change", args=[rule.pk])
    prices = reverse("admin:pricing_productprice_changelist")
    bolt_page = reverse("admin:pricing_productprice_change", args=[world.bolt.pk])
    venv = Path(sys.executable).parent.parent
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    said: dict[str, str] = {}
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
            page.goto(f"{server.url}/admin/login/?next={rule_page}")
            page.fill("#id_username", "operator")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")

            # A markup of 25 % instead of 20: 963,90 × 1,25 = 1 204,88, up to 1 205.
            page.fill("#id_markup_percent", "25")
            with page.expect_navigation():
                page.click("input[name=_save]")
            said["saved"] = page.inner_text(".messagelist")
            outbox_run()
            page.goto(f"{server.url}{prices}")
            said["list"] = page.inner_text("#result_list")
            page.goto(f"{server.url}{bolt_page}")
            said["audit"] = page.inner_text("#content")
            page.screenshot(path=str(ARTIFACTS / "audit-ru.png"), full_page=True)

            # 60 %: 1 543, more than 25 % above 1 205: held until someone approves it.
            page.goto(f"{server.url}{rule_page}")
            page.fill("#id_markup_percent", "60")
            with page.expect_navigation():
                page.click("input[name=_save]")
            outbox_run()
            page.goto(f"{server.url}{prices}?status__exact=held")
            said["held"] = page.inner_text("#result_list")
            page.check("#result_list tbody tr:has-text('P-1') input.action-select")
            page.select_option("select[name=action]", "approve")
            with page.expect_navigation():
                page.click("button[name=index]")
            said["approved"] = page.inner_text(".messagelist")
            page.goto(f"{server.url}{bolt_page}")
            said["approved page"] = page.inner_text("#content")
        finally:
            context.close()

    text = {key: value.replace("\xa0", " ") for key, value in said.items()}
    assert "Изменено: правило цены «Всё»." in text["saved"]
    assert "1205,00" in text["list"].replace(" ", "") or "1205.00" in text["list"]
    assert "Правило цены «Всё»." in text["audit"]
    assert "Наценка 25 %: 1 204,88 ₽." in text["audit"]
    assert "Округление «вверх до рубля»: 1 205,00 ₽." in text["audit"]
    assert "Лучшее предложение: Василёк, код V-1" in text["audit"]
    assert "ждёт утверждения" in text["held"] and "P-1" in text["held"]
    assert "1 цена утверждена и опубликована." in text["approved"]
    assert "Утвердил(а) operator." in text["approved page"]
    price = ProductPrice.objects.get(product=world.bolt)
    assert (price.status, price.price) == (ProductPrice.Status.PUBLISHED, Decimal("1543.00"))
    assert price.approved_by == operator
    assert server.returncode == 0, server.log()[-3000:]
