"""pricefeed.intake: what a recorded message means for the price lists of its mailbox."""

from __future__ import annotations

import hashlib
import logging
import time

import pytest
from django.core import mail
from django.utils import timezone

from devkit.samples import price_list_csv, zipped
from mailboxes import processing
from mailboxes.mime import AttachmentPart
from mailboxes.models import InboundMessage
from pricefeed import intake, matching
from pricefeed.imports import lifecycle
from pricefeed.models import PriceImport, PriceListConfig
from tests.factories import ROWS, create_config, english, price_mail

pytestmark = pytest.mark.django_db

Status = InboundMessage.Status


# -- attachments_inspect -----------------------------------------------------------------


def part(key: str, filename: str, data: bytes) -> AttachmentPart:
    return AttachmentPart(
        key=key,
        filename=filename,
        content_type="application/octet-stream",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def test_attachments_are_listed_for_matching_with_the_files_inside_archives():
    archive = zipped({"prices/opt.csv": price_list_csv(ROWS), "readme.txt": b"hi"})
    parts = [part("part2", "p.csv", b"sku;price"), part("part3", "all.zip", archive)]

    plain, inspected = intake.attachments_inspect(parts, {"part2": b"sku;price", "part3": archive})

    assert isinstance(plain, matching.Attachment)
    assert (plain.key, plain.filename, plain.size, plain.members) == ("part2", "p.csv", 9, ())
    assert inspected.sha256 == parts[1].sha256
    assert sorted(inspected.members) == ["prices/opt.csv", "readme.txt"]
    assert inspected.archive_error == ""


def test_an_archive_over_the_limits_carries_the_reason_instead_of_its_files(settings):
    settings.PRICEFEED_PARSE_MAX_ENTRIES = 2
    archive = zipped({f"p{i}.csv": b"x" for i in range(5)})

    (inspected,) = intake.attachments_inspect([part("part2", "a.zip", archive)], {"part2": archive})

    assert inspected.members == ()
    assert inspected.archive_error


# -- message_process ---------------------------------------------------------------------


@pytest.fixture
def configs(mailbox):
    return [
        create_config(
            mailbox,
            name="Опт",
            sender_pattern="*@supplier.ru",
            subject_pattern="прайс*",
            filename_pattern="прайс_*.xlsx",
        ),
        create_config(mailbox, name="Остатки", sender_pattern="", filename_pattern="*остатки*"),
    ]


TWO_PRICES_AND_STOCK = [
    ("прайс_опт.xlsx", b"opt-bytes"),
    ("остатки.xlsx", b"stock-bytes"),
    ("ПРАЙС_розница.XLSX", b"retail-bytes"),
]


@pytest.mark.usefixtures("imports_wait")
def test_matching_message_is_done_with_one_import_per_config_and_attachment(configs, make_message):
    opt, stock = configs
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.DONE
    message.refresh_from_db()
    assert message.status == Status.DONE
    assert message.attempts == 1
    assert message.claimed_by == ""
    assert message.finished_at is not None
    imports = {
        (i.config_id, i.attachment_key, i.filename, i.size)
        for i in PriceImport.objects.filter(message=message)
    }
    assert imports == {
        (opt.pk, "part2", "прайс_опт.xlsx", len(b"opt-bytes")),
        (opt.pk, "part4", "ПРАЙС_розница.XLSX", len(b"retail-bytes")),
        (stock.pk, "part3", "остатки.xlsx", len(b"stock-bytes")),
    }
    assert all(i.status == PriceImport.Status.PENDING for i in PriceImport.objects.all())
    report = message.match_report
    assert [c["name"] for c in report["configs"]] == ["Опт", "Остатки"]
    assert all(c["matched"] for c in report["configs"])


def test_processing_a_done_message_again_claims_nothing_and_adds_no_imports(configs, make_message):
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))
    intake.message_process(message_id=message.pk, worker="w1")

    again = intake.message_process(message_id=message.pk, worker="w2")

    assert again is None
    assert PriceImport.objects.filter(message=message).count() == 3
    message.refresh_from_db()
    assert message.attempts == 1


def test_reprocessing_after_requeue_keeps_one_import_per_config_and_attachment(
    configs, make_message, enqueued
):
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))
    intake.message_process(message_id=message.pk, worker="w1")
    processing.messages_requeue(message_ids=[message.pk])

    status = intake.message_process(message_id=message.pk, worker="w2")

    assert status == Status.DONE
    assert PriceImport.objects.filter(message=message).count() == 3


def test_message_matching_no_config_is_ignored_with_a_reason_per_config(configs, make_message):
    raw = price_mail(
        [("invoice.pdf", b"%PDF")], sender="spam@evil.example", subject="Счёт на оплату"
    )
    message = make_message(raw)

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.IGNORED
    message.refresh_from_db()
    assert message.status == Status.IGNORED
    assert not PriceImport.objects.exists()
    verdicts = {c["name"]: c for c in message.match_report["configs"]}
    assert set(verdicts) == {"Опт", "Остатки"}
    assert not verdicts["Опт"]["matched"]
    assert english(verdicts["Опт"]["reasons"]) == [
        "sender 'spam@evil.example' does not match '*@supplier.ru'",
        "subject 'Счёт на оплату' does not match 'прайс*'",
        "no attachment name matches 'прайс_*.xlsx' (attachments: 'invoice.pdf')",
    ]
    assert english(verdicts["Остатки"]["reasons"]) == [
        "no attachment name matches '*остатки*' (attachments: 'invoice.pdf')"
    ]
    assert message.match_report["sender"] == "spam@evil.example"


def test_message_in_a_mailbox_without_configs_is_ignored_with_a_note(mailbox, make_message):
    message = make_message()

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.IGNORED

    message.refresh_from_db()
    assert message.match_report["configs"] == []
    assert english(message.match_report["note"]) == "the mailbox has no enabled configs"


def test_disabled_config_is_not_evaluated(configs, make_message):
    PriceListConfig.objects.filter(name="Остатки").update(enabled=False)
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))

    intake.message_process(message_id=message.pk, worker="w1")

    message.refresh_from_db()
    assert [c["name"] for c in message.match_report["configs"]] == ["Опт"]
    assert PriceImport.objects.count() == 2


def test_encoded_display_name_does_not_pass_for_the_sender_address(configs, make_message):
    # From: "prices@supplier.ru" <attacker@evil.example>, the name as an RFC 2047 word.
    raw = price_mail(sender="=?utf-8?q?prices=40supplier=2Eru?= <attacker@evil.example>")
    message = make_message(raw)

    intake.message_process(message_id=message.pk, worker="w1")

    message.refresh_from_db()
    opt = next(c for c in message.match_report["configs"] if c["name"] == "Опт")
    assert not opt["matched"]
    assert not PriceImport.objects.filter(config__name="Опт").exists()


def test_malformed_mime_is_rejected_with_the_reason(configs, make_message):
    raw = (
        b"From: prices@supplier.ru\r\n"
        b"Subject: price\r\n"
        b"MIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed\r\n"
        b"\r\n"
        b"--X\r\nContent-Type: text/plain\r\n\r\nhi\r\n--X--\r\n"
    )
    message = make_message(raw)

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.REJECTED
    message.refresh_from_db()
    assert message.status == Status.REJECTED
    assert message.last_error.startswith("malformed MIME: ")
    assert "NoBoundaryInMultipartDefect" in message.last_error
    assert message.match_report["defects"]
    assert not PriceImport.objects.exists()


@pytest.fixture
def broken_matching(monkeypatch):
    def boom(rules, envelope):
        raise RuntimeError("matching exploded")

    monkeypatch.setattr(matching, "evaluate_all", boom)


def test_exception_during_processing_makes_the_message_retryable_later(
    configs, make_message, broken_matching
):
    message = make_message()
    before = timezone.now()

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.RETRYABLE
    message.refresh_from_db()
    assert message.status == Status.RETRYABLE
    assert message.attempts == 1
    assert message.claimed_by == ""
    assert message.next_attempt_at > before
    assert message.last_error == "RuntimeError: matching exploded"
    assert not PriceImport.objects.exists()


def test_retryable_message_is_not_claimed_before_it_is_due(configs, make_message, broken_matching):
    message = make_message()
    intake.message_process(message_id=message.pk, worker="w1")

    assert intake.message_process(message_id=message.pk, worker="w2") is None

    message.refresh_from_db()
    assert (message.status, message.attempts) == (Status.RETRYABLE, 1)


def test_exception_after_the_last_attempt_fails_the_message_with_an_alert(
    settings, configs, make_message, broken_matching, caplog, django_capture_on_commit_callbacks
):
    settings.PRICEFEED_PROCESSING_MAX_ATTEMPTS = 1
    settings.ADMINS = [("Ops", "ops@buyer.example")]
    message = make_message()

    with caplog.at_level(logging.ERROR, logger="core.alerts"):
        with django_capture_on_commit_callbacks(execute=True):
            status = intake.message_process(message_id=message.pk, worker="w1")
            assert mail.outbox == []  # the alert mail waits for the commit

    assert status == Status.FAILED
    message.refresh_from_db()
    assert message.status == Status.FAILED
    assert message.last_error == "RuntimeError: matching exploded"
    assert message.finished_at is not None
    alerts = [r for r in caplog.records if r.name == "core.alerts"]
    assert len(alerts) == 1
    assert alerts[0].levelno == logging.ERROR
    assert f"#{message.pk}" in alerts[0].getMessage()
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["ops@buyer.example"]
    assert "message failed" in mail.outbox[0].subject
    assert "matching exploded" in mail.outbox[0].body


def test_a_claim_swept_away_while_matching_records_nothing_and_leaves_the_message_alone(
    configs, make_message, monkeypatch, caplog
):
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))
    evaluate_all = matching.evaluate_all

    def swept_meanwhile(rules, envelope):
        # The sweep took the claim back (the worker looked dead) while it was matching.
        InboundMessage.objects.filter(pk=message.pk).update(
            status=Status.RETRYABLE, claimed_by="", claimed_at=None
        )
        return evaluate_all(rules, envelope)

    monkeypatch.setattr(matching, "evaluate_all", swept_meanwhile)

    # ClaimedWork.run (core.claims) says that the claim was lost.
    with caplog.at_level(logging.WARNING, logger="core.claims"):
        assert intake.message_process(message_id=message.pk, worker="w1") is None

    message.refresh_from_db()
    assert (message.status, message.match_report) == (Status.RETRYABLE, {})
    assert not PriceImport.objects.exists()
    assert [r.action for r in caplog.records if r.name == "core.claims"] == ["claim_lost"]


# -- hostile messages: refused by budget, REJECTED with the reason, never retried --------


def test_a_message_over_a_mime_budget_is_rejected_on_its_first_attempt(configs, make_message):
    depth = 2000
    raw = b"From: prices@supplier.ru\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n"
    for level in range(1, depth):
        raw += b"--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n" % (level - 1, level)
    message = make_message(raw)

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.REJECTED
    message.refresh_from_db()
    assert (message.status, message.attempts) == (Status.REJECTED, 1)
    assert message.last_error.startswith("refused: MIME parts nested more than 20 deep")
    assert "PRICEFEED_MIME_MAX_DEPTH" in english(message.match_report["refused"])
    assert not PriceImport.objects.exists()


def test_a_message_that_takes_too_long_to_read_is_rejected(
    configs, make_message, settings, monkeypatch
):
    settings.PRICEFEED_MIME_MAX_CPU_SECONDS = 0.05
    real_parse = intake.mime.parse_message

    def slow_parse(raw, budget):
        end = time.monotonic() + 30
        while time.monotonic() < end:  # a parser stuck in a quadratic corner
            pass
        return real_parse(raw, budget)

    monkeypatch.setattr(intake.mime, "parse_message", slow_parse)
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.REJECTED
    message.refresh_from_db()
    assert "PRICEFEED_MIME_MAX_CPU_SECONDS" in message.last_error
    assert message.attempts == 1


def test_a_message_with_more_files_than_allowed_is_rejected_without_imports(
    configs, make_message, settings
):
    settings.PRICEFEED_MAX_FILES_PER_MESSAGE = 5
    archives = [
        (f"прайс_{n}.zip", zipped({f"прайс_{n}_{i}.xlsx": b"x" for i in range(3)}))
        for n in range(2)
    ]
    message = make_message(price_mail(archives))

    status = intake.message_process(message_id=message.pk, worker="w1")

    assert status == Status.REJECTED
    message.refresh_from_db()
    assert "more than 5 files" in message.last_error
    assert "PRICEFEED_MAX_FILES_PER_MESSAGE" in message.last_error
    assert not PriceImport.objects.exists()


def test_a_message_with_as_many_files_as_allowed_is_processed(configs, make_message, settings):
    settings.PRICEFEED_MAX_FILES_PER_MESSAGE = 3

    message = make_message(price_mail(TWO_PRICES_AND_STOCK))

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.DONE
    assert PriceImport.objects.filter(message=message).count() == 3


# -- trusted senders ---------------------------------------------------------------------

MX = "mx.buyer.example"


def received(raw: bytes, *authentication_results: str) -> bytes:
    """``raw`` as the receiving server stores it: its Authentication-Results on top."""
    added = "".join(f"Authentication-Results: {value}\r\n" for value in authentication_results)
    return added.encode() + raw


@pytest.fixture
def strict(mailbox, settings):
    settings.PRICEFEED_AUTHSERV_IDS = [MX]
    return create_config(
        mailbox,
        name="Опт",
        sender_pattern="*@supplier.ru",
        filename_pattern="прайс_*.xlsx",
        sender_auth=PriceListConfig.SenderAuth.REQUIRE,
    )


def test_require_imports_from_a_sender_the_receiving_server_authenticated(strict, make_message):
    raw = received(price_mail(), f"{MX}; dmarc=pass (p=reject) header.from=supplier.ru")
    message = make_message(raw)

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.DONE

    message.refresh_from_db()
    assert PriceImport.objects.filter(message=message, config=strict).count() == 1
    (opt,) = message.match_report["configs"]
    assert english(opt["reasons"]) == [
        "matched 1 file(s)",
        f"sender authenticated: dmarc=pass for supplier.ru (Authentication-Results from {MX})",
    ]
    verdict = message.match_report["sender_auth"]
    assert (verdict["authenticated"], verdict["authserv_id"], verdict["dmarc"]) == (
        True,
        MX,
        "pass header.from=supplier.ru",
    )


FAILED_DMARC = f"dmarc=fail header.from=supplier.ru, dkim=none (Authentication-Results from {MX})"


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ([f"{MX}; dmarc=fail (p=none) header.from=supplier.ru; spf=fail"], FAILED_DMARC),
        ([], f"no Authentication-Results from {MX}"),
        (
            [
                "evil.example; dmarc=pass header.from=supplier.ru",
                f"{MX}; dmarc=fail header.from=supplier.ru",
            ],
            FAILED_DMARC,
        ),
    ],
    ids=["dmarc-fail", "no-field-from-our-server", "forged-above"],
)
def test_require_ignores_a_spoofed_sender_and_says_why(strict, make_message, fields, why):
    message = make_message(received(price_mail(), *fields))

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.IGNORED

    message.refresh_from_db()
    assert not PriceImport.objects.exists()
    (opt,) = message.match_report["configs"]
    assert not opt["matched"]
    assert english(opt["reasons"]) == [f"sender not authenticated: {why}"]
    assert message.match_report["sender_auth"]["authenticated"] is False


def test_record_imports_an_unauthenticated_sender_and_notes_the_verdict(
    mailbox, make_message, settings
):
    settings.PRICEFEED_AUTHSERV_IDS = [MX]
    # Chosen: with an authserv-id trusted, a new config defaults to require.
    create_config(
        mailbox,
        name="Опт",
        sender_pattern="*@supplier.ru",
        sender_auth=PriceListConfig.SenderAuth.RECORD,
    )
    message = make_message(received(price_mail(), f"{MX}; dmarc=fail header.from=supplier.ru"))

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.DONE

    message.refresh_from_db()
    assert PriceImport.objects.filter(message=message).count() == 1
    (opt,) = message.match_report["configs"]
    assert english(opt["reasons"][1]).startswith(
        "sender not authenticated (recorded only): dmarc=fail"
    )


def test_a_reprocessed_message_is_judged_with_the_authserv_ids_configured_now(
    strict, make_message, settings, enqueued
):
    message = make_message(
        received(price_mail(), "mx2.buyer.example; dmarc=pass header.from=supplier.ru")
    )
    assert intake.message_process(message_id=message.pk, worker="w1") == Status.IGNORED

    settings.PRICEFEED_AUTHSERV_IDS = [MX, "mx2.buyer.example"]
    processing.messages_requeue(message_ids=[message.pk])

    assert intake.message_process(message_id=message.pk, worker="w2") == Status.DONE
    assert PriceImport.objects.filter(message=message).count() == 1


# -- starting the imports ----------------------------------------------------------------


def csv_config(mailbox) -> PriceListConfig:
    return create_config(mailbox, sender_pattern="*@supplier.ru", filename_pattern="*.csv")


def test_a_small_file_is_imported_by_the_task_that_read_its_message(
    mailbox, make_message, no_queue
):
    config = csv_config(mailbox)
    message = make_message(price_mail([("прайс.csv", price_list_csv(ROWS))]))

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.DONE

    (price_import,) = PriceImport.objects.filter(message=message)
    assert (price_import.config_id, price_import.status) == (config.pk, "SUCCEEDED")
    assert price_import.items.count() == len(ROWS)
    assert no_queue["imports"] == []


def test_larger_files_and_files_in_archives_are_left_to_the_queue(
    mailbox, make_message, no_queue, monkeypatch
):
    csv_config(mailbox)
    small, large = price_list_csv(ROWS[:1]), price_list_csv(ROWS)
    monkeypatch.setattr(lifecycle, "INLINE_IMPORT_BYTES", len(small))
    raw = price_mail([("a.csv", small), ("b.csv", large), ("c.zip", zipped({"c.csv": small}))])
    message = make_message(raw)

    intake.message_process(message_id=message.pk, worker="w1")

    imports = {i.filename: i for i in PriceImport.objects.filter(message=message)}
    assert {name: i.status for name, i in imports.items()} == {
        "a.csv": "SUCCEEDED",
        "b.csv": "PENDING",
        "c.csv": "PENDING",
    }
    assert sorted(no_queue["imports"]) == sorted([imports["b.csv"].pk, imports["c.csv"].pk])


def test_a_small_file_that_fails_to_import_leaves_its_message_done(mailbox, make_message, no_queue):
    csv_config(mailbox)
    message = make_message(price_mail([("прайс.csv", b"\x00\x01 not a price list")]))

    assert intake.message_process(message_id=message.pk, worker="w1") == Status.DONE

    message.refresh_from_db()
    (price_import,) = PriceImport.objects.filter(message=message)
    assert (message.status, price_import.status) == (Status.DONE, "FAILED")
    assert price_import.last_error
    assert no_queue["imports"] == []
