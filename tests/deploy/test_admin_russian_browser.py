"""Every page of the admin and the API's reference page in a real browser (Debian's
Chromium), in Russian, over demo data with trouble of every kind: no English word an
operator reads, and none of the wrong Russian forms generic patterns used to build.

The pages are found, not listed: every model of the admin site's registry gives its
list, its add page (when the admin may add) and the change page of its first row, so a
model registered tomorrow is crawled tomorrow. What is allowed in Latin letters is a
short list of technical terms and the fixtures' own data (addresses, host and file
names, the servers' replies the fixtures invent)."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import RequestFactory
from django.urls import reverse
from django.utils import translation
from django_q.models import Failure, Success
from django_q.tasks import async_task, schedule

from api.tokens import token_create
from core.texts import Text, stored
from delivery.kinds import EventKind
from delivery.models import AmqpTarget, Delivery, Webhook
from delivery.texts import HTTP_STATUS
from feeds.models import CustomerGroup, CustomerMailing, Feed
from feeds.tokens import feed_token_renew
from fleet.models import ProcessKind
from mailboxes.models import InboundMessage, Mailbox
from outbox.models import OutboxEvent
from pricefeed.models import PriceListConfig, PriceType
from pricing import offers
from pricing.models import (
    OfferRule,
    PriceRule,
    ProductPrice,
    Rate,
    RateFetch,
    SupplierTerms,
)
from products.models import Product, SupplierLink
from tests.factories import receive, run_all
from tests.products.review_data import review_trouble
from tests.requirements import require_chromium

from .support import ROOT, Gunicorn, admin_over_plain_http, unit_command
from .test_admin_browser import CHROMIUM_ARGS, PASSWORD
from .test_admin_lists_browser import LONG_ADDRESS, trouble_of_every_kind

pytestmark = pytest.mark.integration

ARTIFACTS = ROOT / "var" / "test-artifacts" / "admin-russian"

# Words an operator reads in Latin letters in any language, each a name of its own: the
# protocols, formats and encodings (IMAP, SMTP, TLS, MIME, CSV, xlsx, PDF, JSON, zip,
# cp1251), what they define (UID, UIDVALIDITY, Message-ID, INBOX, From,
# Authentication-Results, DKIM, DMARC, SPF), identifiers (SKU, SHA-256, URL, API, ID,
# PID, ISO, IANA, UTC, the ISO 4217 codes RUB and USD, the barcode standards EAN-8,
# EAN-13, UPC-A and GTIN-14), the percentiles' notation (p50, p95), JSON's null, true
# and false, what Django's own Russian help names (the keys Control, Command, Mac;
# LDAP), HTTP, HMAC-SHA256, AMQP and RabbitMQ (event delivery; capitalised on the add
# button), the product's name,
# "e-mail" as Russian writes it, the language switcher's
# "English", the command names of the processes (fleet.ProcessKind).
# LDAP), the feeds' formats (YML, CommerceML), the product's name, "e-mail" as Russian
# writes it, the language switcher's "English", the command names of the processes
# (fleet.ProcessKind).
TECHNICAL = {
    "IMAP", "SMTP", "TLS", "SSL", "STARTTLS", "MIME", "CSV", "csv", "xlsx", "xls", "PDF",
    "pdf", "JSON", "zip", "gzip", "tar", "cp1251", "UID", "UIDVALIDITY", "Message-ID",
    "INBOX", "From", "Authentication-Results", "authserv-id", "DKIM", "DMARC", "SPF",
    "SKU", "SHA-256", "URL", "API", "ID", "PID", "ISO", "IANA", "UTC", "RUB", "USD", "EAN-8",
    "EAN-13", "UPC-A", "GTIN-14", "p50", "p95", "null", "true", "false",
    "Control", "Command", "Mac", "LDAP", "pricefeed", "e-mail", "English",
    "HTTP", "HMAC-SHA256", "AMQP", "RabbitMQ", "RABBITMQ", "YML", "CommerceML",
    *ProcessKind.values,
}  # fmt: skip
# Data, not words: e-mail addresses, URLs, host, file and dotted names, MIME types, time
# zone names, setting names, hexadecimal digests and UUIDs, tokens' shown prefixes,
# file extensions, the quoted keys of a help text's JSON example.
DATA = [
    r"\S+@\S+",
    r"\b[a-z][a-z0-9+.-]*://\S+",
    r"(?<![\w.])(?:[\w-]+\.)+(?:ru|com|test|example|internal|localhost)\b",
    r"[\w-]+\.(?:csv|xlsx|xls|pdf|zip|eml)\b",
    r"\b(?:application|text|image|message|multipart)/[\w.+-]+",
    r"\b[A-Z][a-z]+/[A-Z][A-Za-z_]+\b",
    r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b",
    r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b",
    r"\b[0-9a-f]{8,}\b",
    r"\bpf_\S+",
    r"\.\w+\b",
    r'"[a-z_]+"',
    r"\bre:",
    r"\bSingle Si\w+-On\b",  # Django's own Russian help of the user's password
]
# The fixtures' own values in Latin letters: the servers' replies and headers they
# invent, their SKUs, the patterns, the user's name, the machine's host name.
FIXTURES = [
    r"\bSMTPRecipientsRefused: [^\n\t]*",
    r"refused: the header block is over [^\n\t]*",
    r"\b(?:Re|Fwd)\b",
    r"\b[AB]-\d+\b",
    r"\bprice\b",
    r"(?i)\badmin\b",
    r"\bworker-host\S*",
    r"\b(?:sales\.)?procurement\.\S*",
    r"\bqcluster:\S+",
    r"\borm:default\b",
    r"\bnot a price list\b",
    # The codes of the usual price types (pricefeed 0016): identifiers, as SKUs are.
    r"\b(?:opt|retail|rrp)\b",
    rf"\b{re.escape(socket.gethostname())}\b",
]
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")
# Pages left out of the word check, each for its reason: django-q2's task records show
# a task's arguments and result as Python writes them (data), and its forms' help texts
# are django-q2's own, not translated upstream.
NOT_OURS = ("/admin/django_q/",)

MONTHS = "Январь|Февраль|Март|Апрель|Май|Июнь|Июль|Август|Сентябрь|Октябрь|Ноябрь|Декабрь"
# A count with its noun in the nominative, as Django's "%(count)s %(name)s" makes it:
# the plural names whose nominative is wrong after any number ("27 входящие сообщения",
# "2 импорты"), those whose nominative plural is right after 2, 3 or 4 only ("2
# уведомления", but "19 уведомления"), and a singular name wrong after any number not
# ending in 1 ("65 каталог").
NOMINATIVE_ALWAYS_WRONG = ("входящие сообщения", "импорты прайс-листов", "почтовые ящики")
NOMINATIVE_RIGHT_AFTER_2_TO_4 = (
    "уведомления", "подписки", "настройки прайс-листов", "события исходящей очереди"
)  # fmt: skip
SINGULAR = ("каталог",)
COUNT = re.compile(r"\b(\d+) ([а-яё-]+(?: [а-яё-]+)*)", re.IGNORECASE)


def wrong_counts(text: str) -> list[str]:
    wrong = []
    for found in COUNT.finditer(text):
        n, words = int(found.group(1)), found.group(2).lower()
        few = n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14)
        one = n % 10 == 1 and n % 100 != 11
        if (
            any(words.startswith(name) for name in NOMINATIVE_ALWAYS_WRONG)
            or (not few and any(words.startswith(name) for name in NOMINATIVE_RIGHT_AFTER_2_TO_4))
            or (not one and any(re.match(rf"{name}\b", words) for name in SINGULAR))
        ):
            wrong.append(f"a count with a nominative: {found.group(0)!r}")
    return wrong


# The other wrong forms issue 29 found, each made general: the delete action with a
# singular, "был" of a feminine model, the inline's "one" of a feminine model, the add
# button and the change list's title in the nominative, and a month in the nominative
# after its day.
WRONG_FORMS = {
    "«Удалить выбранные» with a singular": re.compile(
        # («правила» is the neuter plural: «Удалить выбранные правила цены» is right.)
        r"Удалить выбранные (?!правила\s)\S*[бвгджзклмнпрстфхцчшщьа]\s"
    ),
    "«был успешно добавлен» after a feminine model": re.compile(
        r"(?i)(?:Подписка|Настройка|Аренда)\S* .{0,200}был успешно"
    ),
    "«Добавить ещё один» with a feminine noun": re.compile(r"(?i)Добавить ещ[её] один \S*[ая]\b"),
    "a month in the nominative after its day": re.compile(rf"(?i)\b\d{{1,2}} (?:{MONTHS})\b"),
}

# The page's title and visible text, without what is an identifier by its markup: the
# <code> of the API's reference page (paths, parameter and field names), the <kbd> of
# the review queue's keys (Enter, j, k) and the password's hash summary on a user's page.
VISIBLE_TEXT = """() => {
  for (const e of document.querySelectorAll('code, kbd, .field-password div:not(.help)')) {
    e.style.display = 'none';
  }
  return document.title + '\\n' + document.body.innerText;
}"""


def more_trouble() -> None:
    """What trouble_of_every_kind lacks for a page of every model: a broken workbook (a
    stored reason of ours around a library's error), an outbox event given up on, an API
    token, a group, a schedule, django-q2's task records, a price type, our products
    with a supplier line's link to one and a line proposed for review, the bank's rate
    and a manual one, a failed fetch of the bank's rates, a supplier's terms, a webhook,
    a RabbitMQ target and a delivery being retried."""
    mailbox = Mailbox.objects.first()
    assert mailbox is not None
    message = receive(mailbox, [("книга.xlsx", b"PK\x03\x04 not a workbook")], subject="Прайс")
    run_all(message)
    OutboxEvent.objects.filter(pk=OutboxEvent.objects.order_by("pk").values("pk")[:1]).update(
        status=OutboxEvent.Status.FAILED
    )
    InboundMessage.objects.filter(pk=message.pk).update(status=InboundMessage.Status.FAILED)
    user = get_user_model().objects.get(username="admin")
    token_create(user=user, name="Выгрузка в 1С")
    Group.objects.create(name="Операторы")
    schedule("pricefeed.overdue.overdue_sweep", name="Проверка опозданий", minutes=5)
    async_task("pricefeed.overdue.overdue_sweep", sync=False)  # waits in the ORM queue
    review_trouble()
    # The usual price types (pricefeed 0016 makes them; the test database was flushed).
    PriceType.objects.get_or_create(code="rrp", defaults={"name": "РРЦ"})
    Rate.objects.create(currency="USD", date="2026-12-02", rate="78.2284", source=Rate.Source.CBR)
    Rate.objects.create(
        currency="USD", date="2026-12-02", rate="80", source=Rate.Source.MANUAL, entered_by=user
    )
    RateFetch.objects.create(
        date="2026-12-03",
        status=RateFetch.Status.FAILED,
        attempts=2,
        problem=RateFetch.Problem.STATUS,
        detail="500",
        next_attempt_at="2026-12-04T03:05:00Z",
    )
    config = PriceListConfig.objects.order_by("pk").first()
    assert config is not None
    SupplierTerms.objects.create(config=config, rate_surcharge="2")
    # An offer, its rules and a held price with its audit (pricing.offers).
    OfferRule.objects.create(category="Крепёж", strategy=OfferRule.Strategy.PRIORITY)
    rule = PriceRule.objects.create(name="Наценка 20 %", markup_percent="20", rounding=".99")
    product = Product.objects.create(own_code="П-900", name="Болт М8х40", category="Крепёж")
    entry = config.catalogue.filter(valid_to__isnull=True).order_by("pk").first()
    assert entry is not None
    SupplierLink.objects.update_or_create(
        config=config,
        supplier_sku=entry.sku,
        defaults={"product": product, "kind": "manual", "state": "confirmed", "confidence": 1},
    )
    offers.offers_refresh([product.pk])
    PriceRule.objects.filter(pk=rule.pk).update(markup_percent="90")
    offers.offers_refresh([product.pk])
    assert ProductPrice.objects.get(product=product).status == ProductPrice.Status.HELD
    # Event delivery: a webhook, a RabbitMQ target, a delivery retried with its reason.
    hook = Webhook.objects.create(
        name="Магазин",
        url="https://shop.example.ru/hooks/pricefeed",
        secret="секрет-секрет-секрет",
        kinds=list(EventKind),
    )
    AmqpTarget.objects.create(
        name="Шина 1С",
        url="amqps://pricefeed@mq.example.ru:5671/prices",
        password="пароль",
        exchange="pricefeed",
        kinds=[EventKind.PRICE_CHANGED],
    )
    Delivery.objects.create(
        event_id="01a24152-0000-7000-8000-000000000001",
        event_kind=EventKind.PRICE_CHANGED,
        webhook=hook,
        attempts=2,
        **stored("last_error", Text(HTTP_STATUS, status=503, detail="Сервис недоступен")),
    )
    # A feed of our prices for a customer group, and a mailing of its list that failed.
    group = CustomerGroup.objects.create(
        name="Опт",
        adjustment_percent="-5",
        recipients="buyer@example.ru",
        days=[1, 3],
        time="09:00",
    )
    feed = Feed.objects.create(
        name="Маркет", format=Feed.Format.YML, shop_name="Магазин", customer_group=group
    )
    feed_token_renew(feed)
    CustomerMailing.objects.create(
        group=group,
        recipient="buyer@example.ru",
        version=1,
        status=CustomerMailing.Status.FAILED,
        attempts=8,
        last_error="SMTPRecipientsRefused: {'buyer@example.ru': (550, b'5.1.1 rejected')}",
    )
    for n, model in enumerate((Success, Failure)):
        model.objects.create(
            id=f"{n:032x}",
            name="пример",
            func="pricefeed.tasks.price_import_task",
            started="2026-12-04T03:00:00Z",
            stopped="2026-12-04T03:00:01Z",
            success=model is Success,
            result=None,
        )


def pages_of_the_admin(user) -> tuple[list[str], list[str]]:
    """The admin's pages, read from its registry: every list, every add page the admin
    may use, the change page of every model's first row; and the models with no row."""
    request = RequestFactory().get("/admin/")
    request.user = user
    pages: list[str] = ["/admin/"]
    empty: list[str] = []
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        name = f"admin:{opts.app_label}_{opts.model_name}"
        if not model_admin.has_view_or_change_permission(request):
            continue
        pages.append(reverse(f"{name}_changelist"))
        if model_admin.has_add_permission(request):
            pages.append(reverse(f"{name}_add"))
        first = model_admin.get_queryset(request).order_by("pk").first()
        if first is None:
            empty.append(opts.label)
        else:
            pages.append(reverse(f"{name}_change", args=[first.pk]))
    return pages, empty


def english_in(text: str) -> list[str]:
    """The Latin words of ``text`` that are neither a technical term nor data (a single
    capital letter is a spreadsheet's column or a placeholder: "столбец C", "N часов")."""
    for pattern in FIXTURES + DATA:
        text = re.sub(pattern, " ", text)
    return [
        word
        for word in LATIN_WORD.findall(text)
        if word not in TECHNICAL and not re.fullmatch("[A-Z]", word)
    ]


# Masculine names of the living, whose accusative is their genitive ("пользователя").
ANIMATE = ("пользователь",)


def unlike_their_accusative() -> list[str]:
    """The admin's model names (nominative, Russian) that a sentence wanting the
    accusative must not use as they are: the feminine ones ("подписка": "Добавить
    подписку") and the animate masculine ones."""
    with translation.override("ru"):
        names = {str(model._meta.verbose_name).lower() for model in admin.site._registry}
    return sorted(n for n in names if n.split()[0].endswith(("а", "я")) or n in ANIMATE)


def accusative_forms() -> dict[str, re.Pattern[str]]:
    """The add button and page, and the change list's title, with a name in the
    nominative ("ДОБАВИТЬ ПОДПИСКА", "Выберите пользователь для изменения")."""
    names = "|".join(re.escape(name) for name in unlike_their_accusative())
    return {
        "«Добавить» with a nominative": re.compile(rf"(?i)\bДобавить (?:{names})(?![а-яё])"),
        "«Выберите … для изменения» with a nominative": re.compile(
            rf"(?i)\bВыберите (?:{names}) для (?:изменения|просмотра)"
        ),
    }


def wrong_forms_in(text: str, forms: dict[str, re.Pattern[str]]) -> list[str]:
    return wrong_counts(text) + [
        f"{name}: {found.group(0)!r}"
        for name, found in ((name, pattern.search(text)) for name, pattern in forms.items())
        if found
    ]


def test_no_english_word_nor_wrong_form_on_any_admin_page_in_russian(transactional_db, tmp_path):
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    env = admin_over_plain_http(tmp_path)
    user = get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    trouble_of_every_kind()
    more_trouble()
    pages, empty = pages_of_the_admin(user)
    assert not empty, f"no row to open the change page of: {empty}"
    pages += [
        reverse("api:docs"),
        reverse("admin:products_supplierlink_review"),
        "/admin/no-such-page/",
    ]
    venv = Path(sys.executable).parent.parent
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    english: dict[str, list[str]] = {}
    wrong: dict[str, list[str]] = {}
    statuses: dict[str, int] = {}
    languages: dict[str, str | None] = {}
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
        try:
            page = context.new_page()
            page.goto(f"{server.url}/admin/login/?next=/admin/")
            page.fill("#id_username", "admin")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/")
            # One save, for the message Django builds from a feminine model's name.
            page.goto(f"{server.url}/admin/notifications/subscription/add/")
            page.fill("#id_email", "buyer@example.ru")
            page.click("input[name=_save]")
            page.wait_for_url("**/notifications/subscription/")
            texts = {"the subscription saved": page.evaluate(VISIBLE_TEXT)}
            for path in pages:
                response = page.goto(f"{server.url}{path}")
                statuses[path] = response.status if response else 0
                languages[path] = page.locator("html").get_attribute("lang")
                if path == reverse("api:docs"):
                    page.screenshot(path=str(ARTIFACTS / "api-docs-ru.png"), full_page=True)
                texts[path] = page.evaluate(VISIBLE_TEXT)
        finally:
            context.close()

    (ARTIFACTS / "texts.txt").write_text(
        "\n\n".join(f"=== {path}\n{text}" for path, text in texts.items())
    )
    # The check of the accusative has names to look for: a feminine one, an animate one.
    assert {"подписка", "пользователь"} <= set(unlike_their_accusative())
    checked = {**WRONG_FORMS, **accusative_forms()}
    for path, text in texts.items():
        if (words := english_in(text)) and not path.startswith(NOT_OURS):
            english[path] = sorted(set(words))
        if forms := wrong_forms_in(text, checked):
            wrong[path] = forms
    assert english == {}, "English words:\n" + "\n".join(f"{p}: {w}" for p, w in english.items())
    failed = {path: status for path, status in statuses.items() if status != 200}
    assert failed == {"/admin/no-such-page/": 404}
    assert {path: lang for path, lang in languages.items() if lang != "ru"} == {}
    assert wrong == {}, "wrong forms:\n" + "\n".join(f"{p}: {w}" for p, w in wrong.items())
    assert LONG_ADDRESS in texts["/admin/notifications/notification/"]
    assert server.returncode == 0, server.log()[-3000:]
