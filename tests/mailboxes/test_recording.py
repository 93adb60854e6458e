"""mailboxes.services: recording fetched mail and the processing state machine."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from mailboxes import services
from mailboxes.exceptions import LeaseLost, UidValidityChanged
from mailboxes.leases import lease_acquire
from mailboxes.models import InboundMessage, MailboxCheckpoint
from mailboxes.services import Fetched, dedup_key
from pricefeed import matching
from pricefeed.models import PriceImport, PriceListConfig

from .factories import price_mail

pytestmark = pytest.mark.django_db

Status = InboundMessage.Status
OWNER = "instance-a"
FOLDER = "INBOX"


@pytest.fixture
def lease(mailbox):
    return lease_acquire(mailbox_id=mailbox.pk, owner=OWNER, ttl=60)


@pytest.fixture
def checkpoint(lease):
    services.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=1, start_uid=0)
    return MailboxCheckpoint.objects.get(mailbox_id=lease.mailbox_id, folder=FOLDER)


def record(lease, *items: Fetched, uidvalidity: int = 1) -> list[InboundMessage]:
    return services.messages_record(
        lease=lease, folder=FOLDER, uidvalidity=uidvalidity, fetched=list(items)
    )


def fetched(uid: int, raw: bytes) -> Fetched:
    return Fetched(uid=uid, size=len(raw), raw=raw)


def last_uid(mailbox) -> int:
    return MailboxCheckpoint.objects.get(mailbox=mailbox, folder=FOLDER).last_uid


# -- dedup_key --------------------------------------------------------------------------------


def key(**overrides: object) -> str:
    values = {
        "mailbox_id": 1,
        "message_id": "<a@supplier.ru>",
        "date": "Mon, 03 Jun 2024 10:15:00 +0300",
        "sha256": "a" * 64,
        "folder": "INBOX",
        "uidvalidity": 1,
        "uid": 10,
    }
    values.update(overrides)
    return dedup_key(**values)


def test_dedup_key_is_the_same_for_same_message_id_date_and_mailbox():
    # Folder, UID and content do not matter when there is a Message-ID.
    assert key() == key(folder="Archive", uidvalidity=7, uid=99, sha256="b" * 64)


def test_dedup_key_differs_for_another_mailbox():
    assert key() != key(mailbox_id=2)


def test_dedup_key_differs_for_another_date():
    assert key() != key(date="Tue, 04 Jun 2024 10:15:00 +0300")


def test_dedup_key_differs_for_another_message_id():
    assert key() != key(message_id="<b@supplier.ru>")


def test_dedup_key_without_message_id_uses_the_content_hash():
    assert key(message_id="", uid=1) == key(message_id="", uid=2, folder="Other")
    assert key(message_id="") != key(message_id="", sha256="b" * 64)


def test_dedup_key_without_message_id_and_content_uses_the_uid():
    no_content = {"message_id": "", "sha256": ""}
    assert key(**no_content, uid=1) != key(**no_content, uid=2)
    assert key(**no_content, uid=1) != key(**no_content, uid=1, uidvalidity=2)
    assert key(**no_content, uid=1) == key(**no_content, uid=1)


# -- checkpoint_sync --------------------------------------------------------------------------


def test_missing_checkpoint_starts_at_start_uid(lease):
    last = services.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=5, start_uid=42)

    assert last == 42
    checkpoint = MailboxCheckpoint.objects.get(mailbox_id=lease.mailbox_id, folder=FOLDER)
    assert (checkpoint.uidvalidity, checkpoint.last_uid) == (5, 42)


def test_uidvalidity_change_resets_last_uid_to_zero(lease, checkpoint):
    MailboxCheckpoint.objects.filter(pk=checkpoint.pk).update(last_uid=300)

    last = services.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=2, start_uid=500)

    assert last == 0
    checkpoint.refresh_from_db()
    assert (checkpoint.uidvalidity, checkpoint.last_uid) == (2, 0)


def test_checkpoint_sync_with_a_stale_lease_raises_lease_lost(mailbox, lease):
    lease_acquire(mailbox_id=mailbox.pk, owner=OWNER, ttl=60)

    with pytest.raises(LeaseLost):
        services.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=1, start_uid=0)
    assert not MailboxCheckpoint.objects.exists()


# -- messages_record --------------------------------------------------------------------------


def test_records_are_created_in_uid_order_and_advance_the_checkpoint(
    mailbox, lease, checkpoint, enqueued, django_capture_on_commit_callbacks
):
    raws = {uid: price_mail(message_id=f"<m{uid}@supplier.ru>") for uid in (7, 3, 5)}

    with django_capture_on_commit_callbacks(execute=True):
        created = record(lease, *(fetched(uid, raw) for uid, raw in raws.items()))

    assert [r.uid for r in created] == [3, 5, 7]
    stored = list(InboundMessage.objects.order_by("pk"))
    assert [m.uid for m in stored] == [3, 5, 7]
    assert all(m.status == Status.RECEIVED for m in stored)
    assert bytes(stored[0].raw) == raws[3]
    assert stored[0].message_id == "<m3@supplier.ru>"
    assert stored[0].subject == "Прайс-лист на июнь"
    assert stored[0].from_address == "prices@supplier.ru"
    assert last_uid(mailbox) == 7
    assert enqueued == [m.pk for m in stored]


def test_processing_is_enqueued_only_after_commit(lease, checkpoint, enqueued):
    record(lease, fetched(1, price_mail()))

    # Still inside the test's transaction: nothing may have been handed to the queue.
    assert enqueued == []


def test_uids_at_or_below_the_checkpoint_are_not_recorded_again(mailbox, lease, checkpoint):
    record(lease, fetched(4, price_mail(message_id="<a@x>")))

    created = record(
        lease,
        fetched(3, price_mail(message_id="<old@x>")),
        fetched(4, price_mail(message_id="<a@x>")),
        fetched(5, price_mail(message_id="<b@x>")),
    )

    assert [r.uid for r in created] == [5]
    assert last_uid(mailbox) == 5


def test_identical_duplicate_in_a_later_batch_is_skipped(mailbox, lease, checkpoint):
    raw = price_mail()
    record(lease, fetched(1, raw))

    created = record(lease, fetched(2, raw))

    assert created == []
    assert InboundMessage.objects.count() == 1
    assert last_uid(mailbox) == 2


def test_identical_duplicate_within_one_batch_is_skipped(mailbox, lease, checkpoint):
    raw = price_mail()

    created = record(lease, fetched(1, raw), fetched(2, raw))

    assert [r.uid for r in created] == [1]
    assert InboundMessage.objects.count() == 1
    assert last_uid(mailbox) == 2


def test_identical_duplicate_without_message_id_is_skipped_by_content(lease, checkpoint):
    raw = price_mail(message_id=None)

    created = record(lease, fetched(1, raw), fetched(2, raw))

    assert [r.uid for r in created] == [1]


def test_same_message_id_with_different_content_is_rejected_naming_the_message_id(
    lease, checkpoint, enqueued, django_capture_on_commit_callbacks
):
    first = price_mail(message_id="<dup@supplier.ru>", body="original")
    second = price_mail(message_id="<dup@supplier.ru>", body="tampered")
    record(lease, fetched(1, first))

    with django_capture_on_commit_callbacks(execute=True):
        (copy,) = record(lease, fetched(2, second))

    copy.refresh_from_db()
    assert copy.status == Status.REJECTED
    assert "<dup@supplier.ru>" in copy.last_error
    assert "different content" in copy.last_error
    assert bytes(copy.raw) == second
    assert copy.pk not in enqueued


def test_same_message_id_with_different_content_in_one_batch_is_rejected(lease, checkpoint):
    first = price_mail(message_id="<dup@supplier.ru>", body="original")
    second = price_mail(message_id="<dup@supplier.ru>", body="tampered")

    created = record(lease, fetched(1, first), fetched(2, second))

    assert [(r.uid, r.status) for r in created] == [(1, Status.RECEIVED), (2, Status.REJECTED)]
    assert "Message-ID <dup@supplier.ru> was already recorded" in created[1].last_error


def test_over_size_message_fetched_as_header_only_is_rejected_without_body(
    settings, lease, checkpoint, enqueued, django_capture_on_commit_callbacks
):
    settings.PRICEFEED_MAX_MESSAGE_BYTES = 1000
    header = b"Subject: huge\r\nMessage-ID: <huge@supplier.ru>\r\nFrom: a@supplier.ru\r\n\r\n"

    with django_capture_on_commit_callbacks(execute=True):
        (rec,) = record(lease, Fetched(uid=1, size=5000, header=header))

    rec.refresh_from_db()
    assert rec.status == Status.REJECTED
    assert rec.raw is None
    assert rec.sha256 == ""
    assert rec.subject == "huge"
    assert rec.message_id == "<huge@supplier.ru>"
    assert "5000 bytes, over the limit of 1000 bytes" in rec.last_error
    assert "PRICEFEED_MAX_MESSAGE_BYTES" in rec.last_error
    assert enqueued == []


def test_message_larger_than_the_limit_despite_its_reported_size_is_rejected(
    settings, lease, checkpoint
):
    settings.PRICEFEED_MAX_MESSAGE_BYTES = 1000
    raw = price_mail(attachments=[("прайс.xlsx", b"x" * 5000)])

    (rec,) = record(lease, Fetched(uid=1, size=10, raw=raw))

    rec.refresh_from_db()
    assert rec.status == Status.REJECTED
    assert rec.raw is None
    assert f"{len(raw)} bytes, over the limit of 1000 bytes" in rec.last_error


def test_message_without_message_id_is_recorded_with_a_warning(lease, checkpoint):
    (rec,) = record(lease, fetched(1, price_mail(message_id=None)))

    rec.refresh_from_db()
    assert rec.status == Status.RECEIVED
    assert rec.message_id == ""
    assert rec.warnings == ["no Message-ID header: duplicates are recognised by content hash"]


def test_stale_lease_token_raises_lease_lost_and_records_nothing(mailbox, lease, checkpoint):
    newer = lease_acquire(mailbox_id=mailbox.pk, owner=OWNER, ttl=60)
    assert newer.token == lease.token + 1

    with pytest.raises(LeaseLost):
        record(lease, fetched(1, price_mail()))

    assert not InboundMessage.objects.exists()
    assert last_uid(mailbox) == 0


def test_recording_under_another_uidvalidity_than_the_checkpoint_raises(lease, checkpoint):
    with pytest.raises(UidValidityChanged):
        record(lease, fetched(1, price_mail()), uidvalidity=2)

    assert not InboundMessage.objects.exists()


def test_after_uidvalidity_change_re_recorded_messages_are_skipped_as_duplicates(
    mailbox, lease, checkpoint
):
    raws = [price_mail(message_id=f"<m{i}@supplier.ru>") for i in range(3)]
    record(lease, *(fetched(101 + i, raw) for i, raw in enumerate(raws)))
    raw_without_id = price_mail(message_id=None, body="no id")
    record(lease, fetched(104, raw_without_id))

    start = services.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=2, start_uid=0)
    assert start == 0
    # The server renumbered the folder: the same messages come back with new UIDs.
    created = record(
        lease,
        *(fetched(1 + i, raw) for i, raw in enumerate(raws)),
        fetched(4, raw_without_id),
        uidvalidity=2,
    )

    assert created == []
    assert InboundMessage.objects.count() == 4
    checkpoint.refresh_from_db()
    assert (checkpoint.uidvalidity, checkpoint.last_uid) == (2, 4)


# -- message_process --------------------------------------------------------------------------


@pytest.fixture
def configs(mailbox):
    return [
        PriceListConfig.objects.create(
            name="Опт",
            mailbox=mailbox,
            sender_pattern="*@supplier.ru",
            subject_pattern="прайс*",
            filename_pattern="прайс_*.xlsx",
        ),
        PriceListConfig.objects.create(
            name="Остатки", mailbox=mailbox, filename_pattern="*остатки*"
        ),
    ]


TWO_PRICES_AND_STOCK = [
    ("прайс_опт.xlsx", b"opt-bytes"),
    ("остатки.xlsx", b"stock-bytes"),
    ("ПРАЙС_розница.XLSX", b"retail-bytes"),
]


def test_matching_message_is_done_with_one_import_per_config_and_attachment(configs, make_message):
    opt, stock = configs
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))

    status = services.message_process(message_id=message.pk, worker="w1")

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
    services.message_process(message_id=message.pk, worker="w1")

    again = services.message_process(message_id=message.pk, worker="w2")

    assert again is None
    assert PriceImport.objects.filter(message=message).count() == 3
    message.refresh_from_db()
    assert message.attempts == 1


def test_reprocessing_after_requeue_keeps_one_import_per_config_and_attachment(
    configs, make_message, enqueued
):
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))
    services.message_process(message_id=message.pk, worker="w1")
    services.messages_requeue(message_ids=[message.pk])

    status = services.message_process(message_id=message.pk, worker="w2")

    assert status == Status.DONE
    assert PriceImport.objects.filter(message=message).count() == 3


def test_message_matching_no_config_is_ignored_with_a_reason_per_config(configs, make_message):
    raw = price_mail(
        [("invoice.pdf", b"%PDF")], sender="spam@evil.example", subject="Счёт на оплату"
    )
    message = make_message(raw)

    status = services.message_process(message_id=message.pk, worker="w1")

    assert status == Status.IGNORED
    message.refresh_from_db()
    assert message.status == Status.IGNORED
    assert not PriceImport.objects.exists()
    verdicts = {c["name"]: c for c in message.match_report["configs"]}
    assert set(verdicts) == {"Опт", "Остатки"}
    assert not verdicts["Опт"]["matched"]
    assert verdicts["Опт"]["reasons"] == [
        "sender 'spam@evil.example' does not match '*@supplier.ru'",
        "subject 'Счёт на оплату' does not match 'прайс*'",
        "no attachment name matches 'прайс_*.xlsx' (attachments: 'invoice.pdf')",
    ]
    assert verdicts["Остатки"]["reasons"] == [
        "no attachment name matches '*остатки*' (attachments: 'invoice.pdf')"
    ]
    assert message.match_report["sender"] == "spam@evil.example"


def test_message_in_a_mailbox_without_configs_is_ignored_with_a_note(mailbox, make_message):
    message = make_message()

    assert services.message_process(message_id=message.pk, worker="w1") == Status.IGNORED

    message.refresh_from_db()
    assert message.match_report["configs"] == []
    assert message.match_report["note"] == "the mailbox has no enabled configs"


def test_disabled_config_is_not_evaluated(configs, make_message):
    PriceListConfig.objects.filter(name="Остатки").update(enabled=False)
    message = make_message(price_mail(TWO_PRICES_AND_STOCK))

    services.message_process(message_id=message.pk, worker="w1")

    message.refresh_from_db()
    assert [c["name"] for c in message.match_report["configs"]] == ["Опт"]
    assert PriceImport.objects.count() == 2


def test_encoded_display_name_does_not_pass_for_the_sender_address(configs, make_message):
    # From: "prices@supplier.ru" <attacker@evil.example>, the name as an RFC 2047 word.
    raw = price_mail(sender="=?utf-8?q?prices=40supplier=2Eru?= <attacker@evil.example>")
    message = make_message(raw)

    services.message_process(message_id=message.pk, worker="w1")

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

    status = services.message_process(message_id=message.pk, worker="w1")

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

    status = services.message_process(message_id=message.pk, worker="w1")

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
    services.message_process(message_id=message.pk, worker="w1")

    assert services.message_process(message_id=message.pk, worker="w2") is None

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
            status = services.message_process(message_id=message.pk, worker="w1")
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


# -- sweep, requeue, mark failed --------------------------------------------------------------


def test_sweep_returns_an_expired_processing_claim_to_retryable(settings, make_message, enqueued):
    timeout = settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT
    stuck = make_message(
        status=Status.PROCESSING,
        claimed_by="dead-worker",
        claimed_at=timezone.now() - timedelta(seconds=timeout * 2),
        attempts=1,
    )
    busy = make_message(
        status=Status.PROCESSING, claimed_by="live-worker", claimed_at=timezone.now(), attempts=1
    )

    result = services.messages_sweep()

    assert result.expired_claims == 1
    stuck.refresh_from_db()
    assert stuck.status == Status.RETRYABLE
    assert stuck.claimed_by == ""
    assert "claim by dead-worker expired" in stuck.last_error
    assert stuck.next_attempt_at > timezone.now()
    busy.refresh_from_db()
    assert (busy.status, busy.claimed_by) == (Status.PROCESSING, "live-worker")


def test_sweep_enqueues_a_retryable_message_that_is_due(make_message, enqueued):
    # Marked RETRYABLE two minutes ago, due one minute ago.
    due = make_message(
        status=Status.RETRYABLE, attempts=1, next_attempt_at=timezone.now() - timedelta(minutes=1)
    )
    InboundMessage.objects.filter(pk=due.pk).update(
        updated_at=timezone.now() - timedelta(minutes=2)
    )
    make_message(
        status=Status.RETRYABLE, attempts=1, next_attempt_at=timezone.now() + timedelta(hours=1)
    )

    result = services.messages_sweep()

    assert enqueued == [due.pk]
    assert result.requeued == 1
    # Handed to the queue once: the next sweep leaves it to the worker.
    assert services.messages_sweep().requeued == 0
    assert enqueued == [due.pk]


def test_sweep_enqueues_a_received_message_nobody_picked_up(settings, make_message, enqueued):
    forgotten = make_message()
    fresh = make_message()
    InboundMessage.objects.filter(pk=forgotten.pk).update(
        updated_at=timezone.now() - timedelta(seconds=settings.PRICEFEED_REQUEUE_AFTER * 2)
    )

    services.messages_sweep()

    assert enqueued == [forgotten.pk]
    assert fresh.pk not in enqueued


def test_requeue_moves_finished_messages_back_to_received_and_enqueues_them(
    make_message, enqueued, django_capture_on_commit_callbacks
):
    finished = [
        make_message(status=s, attempts=3, last_error="old error", finished_at=timezone.now())
        for s in (Status.DONE, Status.IGNORED, Status.FAILED)
    ]
    processing = make_message(status=Status.PROCESSING, claimed_by="w9", attempts=1)

    with django_capture_on_commit_callbacks(execute=True):
        moved = services.messages_requeue(message_ids=[m.pk for m in [*finished, processing]])

    assert moved == 3
    for message in finished:
        message.refresh_from_db()
        assert message.status == Status.RECEIVED
        assert message.attempts == 0
        assert message.last_error == ""
        assert message.finished_at is None
    assert sorted(enqueued) == sorted(m.pk for m in finished)
    processing.refresh_from_db()
    assert (processing.status, processing.claimed_by) == (Status.PROCESSING, "w9")


def test_requeue_skips_a_message_whose_body_was_not_stored(
    make_message, enqueued, django_capture_on_commit_callbacks
):
    refused = make_message(status=Status.REJECTED, raw=None, sha256="")

    with django_capture_on_commit_callbacks(execute=True):
        moved = services.messages_requeue(message_ids=[refused.pk])

    assert moved == 0
    assert enqueued == []
    refused.refresh_from_db()
    assert refused.status == Status.REJECTED


def test_mark_failed_fails_unfinished_messages_with_the_reason(make_message):
    open_ = [make_message(status=s) for s in (Status.RECEIVED, Status.RETRYABLE)]
    processing = make_message(status=Status.PROCESSING, claimed_by="w1")
    done = make_message(status=Status.DONE)

    moved = services.messages_mark_failed(
        message_ids=[m.pk for m in [*open_, processing, done]], reason="marked failed by ops"
    )

    assert moved == 3
    for message in [*open_, processing]:
        message.refresh_from_db()
        assert message.status == Status.FAILED
        assert message.last_error == "marked failed by ops"
        assert message.claimed_by == ""
        assert message.finished_at is not None
    done.refresh_from_db()
    assert done.status == Status.DONE
