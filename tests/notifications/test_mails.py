"""What a notification mail says: in its subscription's language, the plain text
unescaped, the file's own name, a link to the import in the admin, the diff in short."""

from __future__ import annotations

from email import message_from_bytes, policy

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse
from django.utils import translation

from core.texts import Text, store
from devkit.samples import supplier_email, zipped
from notifications import content, services
from notifications.models import Notification, Subscription, default_language
from outbox import services as outbox_services
from pricefeed.imports import lifecycle
from pricefeed.intake import message_process
from pricefeed.models import PriceImport
from pricefeed.parsing import messages as m
from tests.factories import create_message, run_all

pytestmark = pytest.mark.usefixtures("no_queue")

SENDER = "O'Brien & Sons <sales@acme.test>"
FILE = "O'Brien прайс <декабрь>.csv"
PUBLIC_URL = "https://pricefeed.example.com"
GOOD_AND_ONE_BAD = b"sku;price\n" + b"".join(b"A-%d;10,50\n" % i for i in range(9)) + b"B-1;x\n"


@pytest.fixture(autouse=True)
def public_url(settings):
    settings.PRICEFEED_PUBLIC_URL = PUBLIC_URL + "/"  # a trailing slash is dropped
    settings.LANGUAGES = [("ru", "Русский"), ("en", "English")]
    settings.LANGUAGE_CODE = "en-us"


def _received(mailbox, attachments, *, sender=SENDER, subject="Прайс на декабрь"):
    """A message from ``sender`` recorded as the listener records it, matched, and its
    imports run."""
    raw = supplier_email(sender=sender, subject=subject, attachments=attachments)
    address = sender.rpartition("<")[2].rstrip(">")
    message = create_message(
        mailbox, raw, subject=subject, from_address=address, from_header=sender, message_id=""
    )
    message_process(message_id=message.pk, worker="w")
    return run_all(message)


def _deliver_everything() -> None:
    """Runs the outbox as dispatch_outbox would, until nothing is due."""
    while ids := outbox_services.events_claim(dispatcher="d", limit=100):
        outbox_services.events_deliver(event_ids=ids, dispatcher="d")


def _link(price_import: PriceImport) -> str:
    return PUBLIC_URL + reverse("admin:pricefeed_priceimport_change", args=[price_import.pk])


def _parsed(mail):
    """The mail as it goes over the wire, read back by the standard library."""
    return message_from_bytes(mail.message().as_bytes(), policy=policy.default)


def _parts(mail) -> tuple[str, str]:
    """(plain text, HTML) of a sent mail, decoded from its MIME bytes."""
    parsed = _parsed(mail)
    return (
        parsed.get_body(preferencelist=("plain",)).get_content(),
        parsed.get_body(preferencelist=("html",)).get_content(),
    )


# -- in each language ------------------------------------------------------------------


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_mail_in_each_language_has_the_sender_unescaped_the_file_name_and_the_admin_link(
    mailbox, config, mailoutbox, language
):
    Subscription.objects.create(email="buyer@buyer.test", language=language)
    (price_import,) = _received(mailbox, [(FILE, GOOD_AND_ONE_BAD)])
    assert price_import.status == PriceImport.Status.PARTIAL

    _deliver_everything()

    (mail,) = mailoutbox
    text, html = _parts(mail)
    assert SENDER in text
    assert FILE in text
    assert _link(price_import) in text
    assert "&lt;" not in text and "&#x27;" not in text and "&amp;" not in text
    # The HTML part escapes what it shows, as HTML must.
    assert "O&#x27;Brien &amp; Sons &lt;sales@acme.test&gt;" in html
    assert "O&#x27;Brien прайс &lt;декабрь&gt;.csv" in html
    assert f'href="{_link(price_import)}"' in html
    assert f'<html lang="{language}">' in html
    # The subject names the file as it is, and says which language the mail is in.
    parsed = _parsed(mail)
    assert FILE in parsed["Subject"]
    assert parsed["Content-Language"] == language
    assert Notification.objects.get().language == language


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_mail_rendered_under_each_language_keeps_its_facts(mailbox, config, language):
    (price_import,) = _received(mailbox, [(FILE, b"sku;price\nA-1;10,50\n")])
    price_import = PriceImport.objects.select_related("config", "message").get(pk=price_import.pk)

    with translation.override(language):
        subject, text, html = services.render_outcome(price_import, language)
        mail = services.OutcomeMail(price_import, language)
        assert translation.get_language() == language

    assert FILE in subject and "\n" not in subject
    assert SENDER in text and FILE in text and _link(price_import) in text
    assert f'<html lang="{language}">' in html
    assert f"Content-Language: {language}".encode() in mail.data(
        recipient="buyer@buyer.test", message_id="<1@pricefeed.test>"
    )


def test_the_mail_is_rendered_in_its_own_language_whatever_the_active_one(mailbox, config):
    (price_import,) = _received(mailbox, [(FILE, b"sku;price\nA-1;10,50\n")])
    with translation.override("ru"):
        subject, text, html = services.render_outcome(price_import, "en")
        assert translation.get_language() == "ru"  # given back as it was
    assert '<html lang="en">' in html
    assert f'Price list "{FILE}" for {config.name}' in text
    assert subject == f"[pricefeed] {config.name}: {FILE} succeeded"


def test_a_digest_in_each_language_names_every_file_with_its_link(mailbox, config, mailoutbox):
    Subscription.objects.create(email="ru@buyer.test", language="ru")
    Subscription.objects.create(email="en@buyer.test", language="en")
    files = [(FILE, b"sku;price\nA-1;1\n"), ("bad.pdf", b"%PDF-1.7 not a price list")]
    good, bad = _received(mailbox, files)

    _deliver_everything()

    mails = {m.to[0]: m for m in mailoutbox}
    assert sorted(mails) == ["en@buyer.test", "ru@buyer.test"]
    for recipient, language in [("ru@buyer.test", "ru"), ("en@buyer.test", "en")]:
        mail = mails[recipient]
        text, html = _parts(mail)
        assert _parsed(mail)["Content-Language"] == language
        assert SENDER in text
        assert FILE in text and "bad.pdf" in text
        assert _link(good) in text and _link(bad) in text
        assert "&lt;" not in text and "&#x27;" not in text
        assert f'href="{_link(bad)}"' in html
        assert "sales@acme.test" in mail.subject
        notifications = Notification.objects.filter(recipient=recipient)
        assert set(notifications.values_list("language", "status")) == {
            (language, Notification.Status.SENT)
        }
    english = mails["en@buyer.test"]
    assert (
        english.subject == "[pricefeed] 2 price lists from sales@acme.test: 1 succeeded, 1 failed"
    )
    assert f'"{FILE}" for {config.name}: Succeeded.' in english.body
    # The outcome counts are the notifications app's own words, in the mail's language.
    assert "1 успешно, 1 с ошибкой" in mails["ru@buyer.test"].subject
    # The imports' numbers in one form per language, as the single mail writes its own.
    assert f"pricefeed, imports #{good.pk}, #{bad.pk}" in english.body
    russian_text, russian_html = _parts(mails["ru@buyer.test"])
    for part in (russian_text, russian_html):
        assert f"pricefeed, импорты № {good.pk}, № {bad.pk}" in part


# -- whose language --------------------------------------------------------------------


def test_a_reply_to_the_sender_is_in_the_language_of_the_subscription_that_asked(
    mailbox, config, mailoutbox
):
    Subscription.objects.create(reply_to_sender=True, language="ru")
    Subscription.objects.create(email="ops@buyer.test", language="en")
    _received(mailbox, [(FILE, b"sku;price\nA-1;1\n")])

    _deliver_everything()

    languages = {m.to[0]: _parsed(m)["Content-Language"] for m in mailoutbox}
    assert languages == {"sales@acme.test": "ru", "ops@buyer.test": "en"}


def test_an_address_named_by_a_subscription_gets_its_language_not_the_reply_to_sender_one(
    mailbox, config
):
    Subscription.objects.create(reply_to_sender=True, language="en")
    Subscription.objects.create(email="Sales@acme.test", language="ru")
    (price_import,) = _received(mailbox, [(FILE, b"sku;price\nA-1;1\n")])
    assert services.recipients_for(price_import) == {"sales@acme.test": "ru"}


@pytest.mark.parametrize(("language_code", "expected"), [("ru", "ru"), ("en-us", "en")])
def test_a_new_subscription_is_in_the_language_of_language_code(
    settings, db, language_code, expected
):
    settings.LANGUAGE_CODE = language_code
    assert default_language() == expected
    assert Subscription(email="a@buyer.test").language == expected


def test_a_notification_in_a_language_no_longer_offered_is_sent_in_the_default_one(
    mailbox, config, mailoutbox, settings
):
    Subscription.objects.create(email="buyer@buyer.test", language="ru")
    _received(mailbox, [(FILE, b"sku;price\nA-1;1\n")])
    settings.LANGUAGES = [("en", "English")]

    _deliver_everything()

    (mail,) = mailoutbox
    assert _parsed(mail)["Content-Language"] == "en"


# -- the file's own name ---------------------------------------------------------------


def test_an_archive_that_cannot_be_opened_is_named_in_the_reason(mailbox, config, mailoutbox):
    Subscription.objects.create(email="buyer@buyer.test")
    (price_import,) = _received(mailbox, [("прайс декабрь.zip", b"PK\x03\x04 not really a zip")])
    assert price_import.status == PriceImport.Status.FAILED
    assert "'attachment'" in price_import.last_error  # as pricefeed's unpacking says it

    _deliver_everything()

    (mail,) = mailoutbox
    text, html = _parts(mail)
    assert "'прайс декабрь.zip'" in text
    assert "attachment" not in text and "attachment" not in html
    assert "прайс декабрь.zip failed" in mail.subject


def test_a_file_inside_an_archive_is_named_by_its_own_name(mailbox, config, mailoutbox):
    Subscription.objects.create(email="buyer@buyer.test")
    archive = zipped({"Остатки/склад 1.csv": b"sku;price\nA-1;1\n"})
    (price_import,) = _received(mailbox, [("prices.zip", archive)])
    assert price_import.filename == "склад 1.csv"

    _deliver_everything()

    (mail,) = mailoutbox
    assert "склад 1.csv" in mail.subject
    assert '"склад 1.csv"' in _parts(mail)[0]


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            Text(m.ZIP_DAMAGED, where=m.ATTACHMENT_ARCHIVE, error="not a zip file"),
            "archive 'p.zip': damaged zip archive (not a zip file)",
        ),
        (Text(m.GZIP_TRUNCATED, label=m.ATTACHMENT), "p.zip: gzip data is truncated"),
        (
            Text(m.ARCHIVE_UNSUPPORTED, format="rar", where=m.ATTACHMENT),
            "unsupported archive: rar (p.zip)",
        ),
        (
            Text(m.ATTACHMENT_TOO_LARGE, where=m.ATTACHMENT, size=31457280, limit="30 MiB"),
            "p.zip is 31,457,280 bytes, more",
        ),
        (
            Text(m.ZIP_DAMAGED, where=Text(m.ARCHIVE, path="inner.zip"), error="bad"),
            "archive 'inner.zip': damaged zip archive (bad)",
        ),
        (lifecycle.NO_VALID_ROWS, "no valid price rows"),
    ],
)
def test_a_reason_names_the_file_where_the_error_says_attachment(error, said):
    price_import = PriceImport(filename="p.zip", attachment_key="part2")
    store(price_import, "last_error", error)
    assert content.reason(price_import).startswith(said)


# -- a subject is one line ---------------------------------------------------------------


@pytest.mark.parametrize("separator", ["\r\n", "\n", "\r", "\u2028", "\x85"])
def test_a_file_name_with_a_line_break_cannot_add_a_header(mailbox, config, separator):
    (price_import,) = _received(mailbox, [("p.csv", b"sku;price\nA-1;1\n")])
    PriceImport.objects.filter(pk=price_import.pk).update(
        filename=f"p.csv{separator}Bcc: victim@example.test"
    )
    price_import = PriceImport.objects.select_related("config", "message").get(pk=price_import.pk)

    mail = services.OutcomeMail(price_import)
    data = mail.data(recipient="buyer@buyer.test", message_id="<1@pricefeed.test>")

    parsed = message_from_bytes(data, policy=policy.default)
    assert parsed["Bcc"] is None
    assert "victim@example.test" in parsed["Subject"]
    assert "\n" not in mail.subject and "\r" not in mail.subject


# -- the link --------------------------------------------------------------------------


def test_without_a_public_url_a_mail_names_the_import_by_number_and_has_no_link(
    mailbox, config, mailoutbox, settings
):
    settings.PRICEFEED_PUBLIC_URL = ""
    Subscription.objects.create(email="buyer@buyer.test")
    (price_import,) = _received(mailbox, [(FILE, b"sku;price\nA-1;1\n")])

    _deliver_everything()

    (mail,) = mailoutbox
    text, html = _parts(mail)
    assert "http" not in text and "href" not in html
    assert f"import #{price_import.pk}" in text


@pytest.mark.parametrize("value", ["pricefeed.example.com", "ftp://x.test", "https://x.test/?a=1"])
def test_a_public_url_that_is_no_http_url_stops_every_command(settings, value):
    settings.PRICEFEED_PUBLIC_URL = value
    with pytest.raises(SystemCheckError, match=r"notifications\.E001"):
        call_command("check")


@pytest.mark.parametrize("value", ["", "https://pricefeed.example.com", "http://10.0.0.5:8000"])
def test_an_empty_or_absolute_public_url_passes_the_checks(settings, value):
    settings.PRICEFEED_PUBLIC_URL = value
    assert content.public_url_problem(value) == ""
    call_command("check")


# -- the diff in short -----------------------------------------------------------------


def test_a_mail_summarises_the_diff_with_the_largest_price_changes_first(
    mailbox, config, mailoutbox
):
    before = b"sku;price\nA-1;100\nA-2;100\nA-3;100\nA-4;10\nGONE;5\n"
    after = b"sku;price\nA-1;101\nA-2;150\nA-3;100\nA-4;4\nNEW-1;7\nNEW-2;8\n"
    _received(mailbox, [("p.csv", before)])
    _deliver_everything()  # nobody to tell yet
    Subscription.objects.create(email="en@buyer.test", language="en")
    Subscription.objects.create(email="ru@buyer.test", language="ru")
    _received(mailbox, [("p.csv", after)])

    _deliver_everything()

    mails = {m.to[0]: _parts(m)[0] for m in mailoutbox}
    english = mails["en@buyer.test"]
    assert "Against the previous price list: 2 added, 1 removed, 3 changed." in english
    assert "New SKUs: NEW-1, NEW-2\n" in english
    assert "No longer listed: GONE\n" in english
    assert "Largest price changes:\n  A-4: 10 → 4 (-60.0%)\n  A-2: 100 → 150 (+50.0%)\n" in english
    assert "  A-1: 100 → 101 (+1.0%)\n" in english
    # In Russian, numbers are written the Russian way; the SKUs are as they are.
    russian = mails["ru@buyer.test"]
    assert "A-4: 10 → 4 (-60,0%)" in russian
    assert "NEW-1, NEW-2" in russian and "GONE" in russian


def test_the_largest_changes_are_of_a_sample_when_the_diff_kept_only_one():
    summary = content.diff_summary(
        {
            "previous_import": 1,
            "added": 0,
            "removed": 0,
            "changed": 120,
            "changed_sample": [
                {"sku": "S-1", "old": "10", "new": "11"},
                {"sku": "S-2", "old": "0", "new": "3"},
                {"sku": "S-3", "old": "10", "new": "30"},
                {"sku": "S-4", "old": None, "new": "4"},
            ],
        },
        changes=3,
    )
    assert summary is not None
    assert not summary.all_changes_seen and summary.changes_seen == 4
    assert [c.sku for c in summary.changes] == ["S-3", "S-1", "S-2"]
    assert [str(c.percent) for c in summary.changes] == ["200.0", "10.0", "None"]


def test_a_failed_import_has_no_diff_summary_and_a_first_one_says_so():
    assert content.diff_summary({}) is None
    first = content.diff_summary({"previous_import": None, "added": 3, "removed": 0, "changed": 0})
    assert first is not None and first.previous_import is None and first.added == 3


def test_a_mail_says_when_its_largest_changes_are_of_a_sample(mailbox, config, mailoutbox):
    before = b"sku;price\n" + b"".join(b"S-%03d;100\n" % i for i in range(60))
    after = b"sku;price\n" + b"".join(b"S-%03d;%d\n" % (i, 101 + i) for i in range(60))
    _received(mailbox, [("p.csv", before)])
    _deliver_everything()  # nobody to tell yet
    Subscription.objects.create(email="en@buyer.test", language="en")
    _received(mailbox, [("p.csv", after)])

    _deliver_everything()

    (mail,) = mailoutbox
    text = _parts(mail)[0]
    assert "60 changed." in text
    assert "Largest price changes among 50 of the 60:\n" in text
    assert text.count(" → ") == 5
