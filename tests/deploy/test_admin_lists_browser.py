"""The admin in a real browser (Debian's Chromium), served as in production (gunicorn,
as the web unit runs it), in Russian and in English: the front page fits 1920 and 1440 px
and a failed import and a failed notification are each two clicks from it; every list
of the apps fits a 1440 px window: no list wider than its window or its results box, no
row taller than two lines of text, long texts cut with the whole in a tooltip; with the
navigation sidebar open, 60 characters and more of an import's reason and of a message's
sender and subject are visible. Screenshots under var/test-artifacts/admin-lists/."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone, translation

from devkit.samples import price_list_csv
from fleet import services as fleet
from fleet.models import ProcessKind
from mailboxes import leases
from mailboxes.models import InboundMessage, Mailbox
from notifications import services as notifications
from notifications.models import Notification, Subscription
from outbox.models import OutboxEvent
from pricefeed.models import OverdueAlert, PriceImport, PriceListConfig
from tests.factories import ROWS, create_config, create_mailbox, create_message, receive, run_all
from tests.requirements import require_chromium

from .support import ROOT, Gunicorn, admin_over_plain_http, unit_command
from .test_admin_browser import CHROMIUM_ARGS, PASSWORD

pytestmark = pytest.mark.integration

ARTIFACTS = ROOT / "var" / "test-artifacts" / "admin-lists"
LISTS = [
    "mailboxes/mailbox",
    "mailboxes/mailboxlease",
    "mailboxes/instanceheartbeat",
    "mailboxes/inboundmessage",
    "fleet/processheartbeat",
    "pricefeed/pricelistconfig",
    "pricefeed/priceimport",
    "pricefeed/priceitem",
    "pricefeed/catalogueentry",
    "outbox/outboxevent",
    "notifications/subscription",
    "notifications/notification",
]
LONG_HOST = "imap.a-supplier-with-a-rather-long-domain-name.example.com"
LONG_ADDRESS = "procurement.department.operator@buyer-company-with-a-long-name.example.ru"
REFUSED = (
    f"SMTPRecipientsRefused: {{'{LONG_ADDRESS}': (550, b'5.1.1 <{LONG_ADDRESS}>: "
    "Recipient address rejected: User unknown in virtual mailbox table')}"
)
PDF = b"%PDF-1.7 not a price list"
ONE_BAD_ROW = (
    "Артикул;Наименование;Цена\r\nA-1;Болт;10,50\r\n"
    "A-2;Гайка;по запросу у менеджера отдела продаж, звоните в рабочие часы\r\n"
    + "".join(f"B-{i};Шайба;{i},00\r\n" for i in range(1, 19))
).encode("cp1251")

# Measured in the page: how far the document and the results box overflow, and the
# tallest row against the height of one line of its text.
MEASURE = """() => {
  const results = document.querySelector('#changelist .results');
  const rows = [...document.querySelectorAll('#result_list tbody tr')];
  const cell = rows.length ? rows[0].querySelector('td, th') : null;
  const line = (cell && parseFloat(getComputedStyle(cell).lineHeight)) || 16;
  return {
    page: document.documentElement.scrollWidth - window.innerWidth,
    results: results ? results.scrollWidth - results.clientWidth : 0,
    rows: rows.length,
    tallest: Math.max(0, ...rows.map(r => r.getBoundingClientRect().height)),
    line: line,
  };
}"""

# Measured in the page: how many characters of each cut text of a column are visible
# (inside the cell's box: not clamped away, not under the ellipsis), and the text's
# whole length (its tooltip), with whether the navigation sidebar is open beside it.
VISIBLE = """(column) => {
  const seen = (cell) => {
    const box = cell.getBoundingClientRect();
    const text = cell.firstChild;
    let shown = 0;
    if (!text || text.nodeType !== Node.TEXT_NODE) return 0;
    const range = document.createRange();
    for (let i = 0; i < text.length; i++) {
      range.setStart(text, i);
      range.setEnd(text, i + 1);
      const r = range.getBoundingClientRect();
      if (r.width > 0 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1
          && r.right <= box.right + 1) shown++;
    }
    // The ellipsis covers the end of a cut text's last line: at most two characters.
    return shown < text.length ? Math.max(0, shown - 2) : shown;
  };
  const sidebar = document.querySelector('#nav-sidebar');
  return {
    sidebar: !!sidebar && sidebar.getBoundingClientRect().width > 100
      && getComputedStyle(sidebar).visibility !== 'hidden',
    cells: [...document.querySelectorAll(`#result_list td.field-${column} .pf-cell`)].map(
      (cell) => ({whole: cell.title.length, visible: seen(cell)})),
  };
}"""
# What must show at 1440 px with the sidebar open: (list, column) and how many
# characters of a longer text at least. An address is shorter than a reason or a
# subject: 30 characters show most of them whole (LONG_ADDRESS is 72).
READABLE = {
    ("pricefeed/priceimport", "reason"): 60,
    ("mailboxes/inboundmessage", "short_subject"): 60,
    ("mailboxes/inboundmessage", "sender"): 30,
}


def trouble_of_every_kind() -> None:
    """Rows with long texts in every list: messages with good, failed and partial
    imports, refused messages, notifications backing off, a lease and heartbeats."""
    mailbox = create_mailbox(
        name="Поставщики — основной ящик отдела закупок",
        host="127.0.0.1",
        port=143,
        security=Mailbox.Security.PLAIN,
        username="procurement.department.buyer.account",
    )
    create_config(
        mailbox,
        name="ТД Металлоконструкции и крепёж (Екатеринбург), основной прайс",
        sender_pattern="*@acme.test",
        subject_pattern="re:прайс|price|остатки|наличие",
        filename_pattern="*",
    )
    create_config(
        mailbox,
        name="Второй поставщик с очень длинным названием организации и филиала",
        sender_pattern="*@a-supplier-with-a-rather-long-domain-name.example.com",
        filename_pattern="Прайс*Металлоконструкции*остатки*наличие*.xlsx",
    )
    Subscription.objects.create(email=LONG_ADDRESS)
    for n in range(6):
        message = receive(
            mailbox,
            [
                (
                    "Прайс-лист ООО Металлоконструкции на декабрь 2026 (полный).csv",
                    price_list_csv(ROWS),
                ),
                ("price.pdf", PDF),
                ("q.csv", ONE_BAD_ROW),
            ],
            subject=f"Прайс-лист на декабрь 2026 года, обновлённый, с новыми позициями, версия {n}",
        )
        run_all(message)
        notifications.notifications_fan_out_message(message_id=message.pk)
    for _ in range(3):
        create_message(
            mailbox,
            status=InboundMessage.Status.REJECTED,
            subject="Re: Fwd: " * 30,
            from_address=f"sales.{LONG_ADDRESS}",
            last_error="refused: the header block is over PRICEFEED_MIME_MAX_HEADER_BYTES "
            "(65536 bytes): 1048576 bytes in 12000 fields " * 3,
        )
    OutboxEvent.objects.filter(kind=notifications.SEND_EVENT).update(
        attempts=3, last_error=REFUSED, next_attempt_at=timezone.now() + timedelta(minutes=7)
    )
    Notification.objects.update(attempts=3, last_error=REFUSED)
    # One the outbox gave up on: the front page's "failed" notifications.
    given_up = Notification.objects.order_by("pk").first()
    assert given_up is not None
    Notification.objects.filter(pk=given_up.pk).update(status=Notification.Status.FAILED)
    # A list that did not come, announced to a long address the server refused.
    config = PriceListConfig.objects.filter(mailbox=mailbox).first()
    assert config is not None
    alert = OverdueAlert.objects.create(
        config=config,
        period_start=timezone.now() - timedelta(days=1),
        due_at=timezone.now() - timedelta(hours=2),
    )
    Notification.objects.create(
        kind="list_overdue", alert=alert, recipient=LONG_ADDRESS, attempts=2, last_error=REFUSED
    )
    instance = "worker-host-with-a-long-name.internal.example.com:123456"
    leases.instance_started(instance_id=instance)
    leases.lease_acquire(mailbox_id=mailbox.pk, owner=instance, ttl=30)
    fleet.process_register(
        process_id=f"qcluster:{instance}", kind=ProcessKind.QCLUSTER, pid=1, broker="orm:default"
    )


def front_page_checked(page, url: str, language: str) -> None:
    """The front page at 1920 and 1440 px: it fits the window, its charts are drawn, and
    a failed import and a failed notification are each two clicks from it (its count,
    then the row)."""
    for width in (1920, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{url}/admin/")
        assert page.locator("html").get_attribute("lang") == language
        page.screenshot(path=str(ARTIFACTS / f"front-page-{language}-{width}.png"), full_page=True)
        sideways = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert sideways <= 0, f"the front page scrolls {sideways} px sideways at {width} px"
        assert page.locator("#chart-imports svg rect.pf-failed").count() >= 1
        assert page.locator("#chart-latency svg circle").count() >= 1
        assert page.locator(".pf-apps .app-mailboxes").count() == 1  # the app list stays

    with translation.override(language):
        failed_import = str(PriceImport.Status.FAILED.label)
        failed_notification = str(Notification.Status.FAILED.label)
    for tile, changelist, shown, status in [
        ("imports", "pricefeed/priceimport", 6, failed_import),  # every message's PDF
        ("notifications", "notifications/notification", 1, failed_notification),
    ]:
        page.goto(f"{url}/admin/")
        count = page.locator(f"#tile-{tile} .pf-row-failed td a").first
        assert count.inner_text().strip() == str(shown)
        count.click()  # one
        page.wait_for_url(f"**/{changelist}/?**")
        page.screenshot(path=str(ARTIFACTS / f"front-page-{tile}-failed-{language}.png"))
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == shown
        rows.first.locator("a[href*='/change/']").first.click()  # two
        page.wait_for_url(f"**/{changelist}/*/change/**")
        assert page.locator(".field-status .readonly").first.inner_text().strip() == status
        page.screenshot(path=str(ARTIFACTS / f"front-page-{tile}-failed-row-{language}.png"))


@pytest.mark.parametrize("language", ["ru", "en"])
def test_every_admin_list_fits_a_1440_px_window_and_shows_its_long_texts(
    transactional_db, tmp_path, language
):
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    env = admin_over_plain_http(tmp_path)
    get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    trouble_of_every_kind()
    venv = Path(sys.executable).parent.parent
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    measured: dict[str, dict] = {}
    visible: dict[tuple[str, str], dict] = {}
    tooltips: list[str] = []
    # No database access in here: Playwright's loop runs in this thread.
    with Gunicorn(command, env, ROOT, tmp_path) as server, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=browser,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 900},
            locale=language,  # Accept-Language: the admin answers in it
        )
        try:
            page = context.new_page()
            page.goto(f"{server.url}/admin/login/?next=/admin/")
            page.fill("#id_username", "admin")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/")
            languages = set()
            front_page_checked(page, server.url, language)
            page.set_viewport_size({"width": 1440, "height": 900})
            for name in LISTS:
                page.goto(f"{server.url}/admin/{name}/")
                languages.add(page.locator("html").get_attribute("lang"))
                measured[name] = page.evaluate(MEASURE)
                shot = f"{name.replace('/', '-')}-{language}-1440.png"
                page.screenshot(path=str(ARTIFACTS / shot))
            for name, column in READABLE:
                page.goto(f"{server.url}/admin/{name}/")
                page.evaluate("localStorage.setItem('django.admin.navSidebarIsOpen', 'true')")
                page.reload()
                visible[(name, column)] = page.evaluate(VISIBLE, column)
                shot = f"{name.replace('/', '-')}-{language}-1440-sidebar.png"
                page.screenshot(path=str(ARTIFACTS / shot))
            page.goto(f"{server.url}/admin/notifications/notification/")
            tooltips = page.eval_on_selector_all(
                "td.field-short_error .pf-cell", "cells => cells.map(c => c.title)"
            )
        finally:
            context.close()

    assert languages == {language}
    for name, m in measured.items():
        assert m["rows"], f"{name}: no rows to measure"
        assert m["page"] <= 0, f"{name}: the page is {m['page']} px wider than the window"
        assert m["results"] <= 0, f"{name}: the list overflows its box by {m['results']} px"
        # Two lines of text and the cell's padding; three would be about a line more.
        assert m["tallest"] < 3 * m["line"] + 16, f"{name}: a row {m['tallest']} px tall"
    for (name, column), seen in visible.items():
        enough = READABLE[(name, column)]
        assert seen["sidebar"], f"{name}: the navigation sidebar is not open"
        long = [cell for cell in seen["cells"] if cell["whole"] > enough]
        assert long, f"{name}: no {column} longer than {enough} characters to measure"
        fewest = min(cell["visible"] for cell in long)
        assert fewest >= enough, f"{name}: {fewest} characters of {column} visible"
    assert tooltips and all(title == REFUSED for title in tooltips)
    assert server.returncode == 0, server.log()[-3000:]
