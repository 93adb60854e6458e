"""mailboxes.recording: fetched mail becomes durable records, once, under the lease."""

from __future__ import annotations

import pytest

from mailboxes import recording
from mailboxes.exceptions import LeaseLost, UidValidityChanged
from mailboxes.leases import lease_acquire
from mailboxes.models import InboundMessage, MailboxCheckpoint
from mailboxes.recording import Fetched, dedup_key
from tests.factories import english, price_mail

pytestmark = pytest.mark.django_db

Status = InboundMessage.Status
OWNER = "instance-a"
FOLDER = "INBOX"


@pytest.fixture
def lease(mailbox):
    return lease_acquire(mailbox_id=mailbox.pk, owner=OWNER, ttl=60)


@pytest.fixture
def checkpoint(lease):
    recording.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=1, start_uid=0)
    return MailboxCheckpoint.objects.get(mailbox_id=lease.mailbox_id, folder=FOLDER)


def record(lease, *items: Fetched, uidvalidity: int = 1) -> list[InboundMessage]:
    return recording.messages_record(
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
    last = recording.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=5, start_uid=42)

    assert last == 42
    checkpoint = MailboxCheckpoint.objects.get(mailbox_id=lease.mailbox_id, folder=FOLDER)
    assert (checkpoint.uidvalidity, checkpoint.last_uid) == (5, 42)


def test_uidvalidity_change_resets_last_uid_to_zero(lease, checkpoint):
    MailboxCheckpoint.objects.filter(pk=checkpoint.pk).update(last_uid=300)

    last = recording.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=2, start_uid=500)

    assert last == 0
    checkpoint.refresh_from_db()
    assert (checkpoint.uidvalidity, checkpoint.last_uid) == (2, 0)


def test_checkpoint_sync_with_a_stale_lease_raises_lease_lost(mailbox, lease):
    lease_acquire(mailbox_id=mailbox.pk, owner=OWNER, ttl=60)

    with pytest.raises(LeaseLost):
        recording.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=1, start_uid=0)
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
    assert "5,000 bytes, over the limit of 1,000 bytes" in rec.last_error
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
    assert f"{len(raw):,} bytes, over the limit of 1,000 bytes" in rec.last_error


def test_message_without_message_id_is_recorded_with_a_warning(lease, checkpoint):
    (rec,) = record(lease, fetched(1, price_mail(message_id=None)))

    rec.refresh_from_db()
    assert rec.status == Status.RECEIVED
    assert rec.message_id == ""
    assert english(rec.warnings) == [
        "no Message-ID header: duplicates are recognised by content hash"
    ]


def test_a_display_name_holding_another_address_is_flagged_on_the_message(lease, checkpoint):
    raw = price_mail(sender='"prices@supplier.ru" <attacker@evil.example>')

    (rec,) = record(lease, fetched(1, raw))

    rec.refresh_from_db()
    assert rec.from_address == "attacker@evil.example"
    assert english(rec.warnings) == [
        "the From field's display name or a comment shows the address prices@supplier.ru,"
        " but the message is from attacker@evil.example"
    ]


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

    start = recording.checkpoint_sync(lease=lease, folder=FOLDER, uidvalidity=2, start_uid=0)
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


# -- hostile headers: bounded work, none of it under the lease ----------------------------


def test_a_subject_bomb_is_recorded_with_its_batch_and_the_checkpoint_moves(
    mailbox, lease, checkpoint
):
    word = "=?utf-8?b?0J/RgNCw0LnRgQ==?="  # "Прайс"
    bomb = (
        "From: x@evil.example\r\nMessage-ID: <bomb@evil.example>\r\n"
        "Subject: " + "\r\n ".join([word] * 120_000) + "\r\n\r\nbody"
    ).encode()
    normal = price_mail(message_id="<next@supplier.ru>")

    created = record(lease, fetched(1, bomb), fetched(2, normal))

    assert [(r.uid, r.status) for r in created] == [(1, Status.RECEIVED), (2, Status.RECEIVED)]
    stored = InboundMessage.objects.get(uid=1)
    assert stored.subject.startswith("ПрайсПрайс") and len(stored.subject) < 1000
    assert bytes(stored.raw) == bomb
    assert bytes(InboundMessage.objects.get(uid=2).raw) == normal
    assert last_uid(mailbox) == 2


def test_headers_are_read_before_the_lease_and_checkpoint_rows_are_locked(
    lease, checkpoint, monkeypatch
):
    from django.db import connection

    from mailboxes import mime

    seen = []
    real = mime.header_fields

    def spy(raw_headers):
        seen.append(len(connection.atomic_blocks))
        return real(raw_headers)

    monkeypatch.setattr(mime, "header_fields", spy)

    record(lease, fetched(1, price_mail(message_id="<a@supplier.ru>")))

    # As deep as the test's own transaction: not inside the recording transaction.
    assert seen == [len(connection.atomic_blocks)]


def test_a_raw_message_stored_in_pieces_is_stored_whole(lease, checkpoint, monkeypatch):
    monkeypatch.setattr(recording, "RAW_PIECE_BYTES", 1000)
    raw = price_mail(message_id="<pieces@supplier.ru>", attachments=[("p.xlsx", b"x" * 5500)])
    assert len(raw) > 5 * recording.RAW_PIECE_BYTES

    (created,) = record(lease, fetched(1, raw))

    assert bytes(InboundMessage.objects.get(pk=created.pk).raw) == raw
