"""Materialization: a fetched message becomes a durable record, once.

A batch of fetched messages is recorded and the folder's checkpoint advanced in one
transaction fenced by the lease token, so a listener that lost its lease writes nothing.
Each message gets a dedup key that survives a UIDVALIDITY change; what cannot be read is
recorded REJECTED with the reason, never dropped. Processing is enqueued after commit.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from core import metrics
from core.faults import crash_point
from core.texts import Text, error_text, store, stored, stored_all

from . import mime, processing, sql, texts
from .exceptions import UidValidityChanged
from .leases import Lease, fence
from .models import InboundMessage, MailboxCheckpoint

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger(__name__)

Status = InboundMessage.Status


def checkpoint_exists(*, mailbox_id: int, folder: str) -> bool:
    """True when the folder has a checkpoint (under any UIDVALIDITY): ``checkpoint_sync``
    will not need a start UID for it."""
    return MailboxCheckpoint.objects.filter(mailbox_id=mailbox_id, folder=folder).exists()


def checkpoint_sync(*, lease: Lease, folder: str, uidvalidity: int, start_uid: int) -> int:
    """Returns the last recorded UID for the folder under ``uidvalidity``.

    A missing checkpoint starts at ``start_uid``; a changed UIDVALIDITY resets it to 0,
    and the dedup keys keep what was already recorded from being recorded twice.
    """
    with transaction.atomic():
        fence(lease)
        checkpoint, created = MailboxCheckpoint.objects.select_for_update().get_or_create(
            mailbox_id=lease.mailbox_id,
            folder=folder,
            defaults={"uidvalidity": uidvalidity, "last_uid": start_uid},
        )
        if not created and checkpoint.uidvalidity != uidvalidity:
            logger.warning(
                "UIDVALIDITY changed mailbox_id=%s folder=%s old=%s new=%s: re-reading the "
                "folder, dedup keys prevent duplicates",
                lease.mailbox_id,
                folder,
                checkpoint.uidvalidity,
                uidvalidity,
                extra={"action": "uidvalidity_changed", "mailbox_id": lease.mailbox_id},
            )
            checkpoint.uidvalidity = uidvalidity
            checkpoint.last_uid = 0
            checkpoint.save(update_fields=["uidvalidity", "last_uid", "updated_at"])
        return checkpoint.last_uid


# -- recording (materialization) ---------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """One message as read from the server: the whole body, or only its header when the
    message was over the size limit."""

    uid: int
    size: int
    raw: bytes | None = None
    header: bytes | None = None
    # When the server got the message (its INTERNALDATE, on its clock), when it said.
    internal_date: datetime | None = None


def dedup_key(
    *,
    mailbox_id: int,
    message_id: str,
    date: str,
    sha256: str,
    folder: str,
    uidvalidity: int,
    uid: int,
) -> str:
    """Message-ID + mailbox + Date; without a Message-ID the content hash; without the
    content (refused unread) the position in the folder."""
    if message_id:
        basis = f"mid\0{mailbox_id}\0{message_id}\0{date}"
    elif sha256:
        basis = f"sha\0{mailbox_id}\0{sha256}"
    else:
        basis = f"uid\0{mailbox_id}\0{folder}\0{uidvalidity}\0{uid}"
    return hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()


def _conflict_key(key: str, sha256: str) -> str:
    return hashlib.sha256(f"conflict\0{key}\0{sha256}".encode()).hexdigest()


def _build_record(
    *, mailbox_id: int, folder: str, uidvalidity: int, item: Fetched
) -> InboundMessage:
    limit = settings.PRICEFEED_MAX_MESSAGE_BYTES
    header_bytes = mime.split_headers(item.raw) if item.raw is not None else (item.header or b"")
    fields = mime.header_fields(header_bytes)
    record = InboundMessage(
        mailbox_id=mailbox_id,
        folder=folder,
        uidvalidity=uidvalidity,
        uid=item.uid,
        message_id=fields.message_id,
        sent_at=fields.sent_at,
        from_address=fields.from_address,
        from_header=fields.from_header,
        subject=fields.subject,
        size=item.size,
    )
    warnings = []
    if not fields.message_id:
        warnings.append(texts.NO_MESSAGE_ID_HASHED if item.raw is not None else texts.NO_MESSAGE_ID)
    if fields.from_shown:  # how a forged sender looks to a reader who sees the name
        warnings.append(
            Text(
                texts.FROM_SHOWS_ANOTHER_ADDRESS,
                shown=fields.from_shown,
                address=fields.from_address,
            )
        )
    raw = item.raw
    if raw is not None and len(raw) > limit:
        raw = None  # the server's RFC822.SIZE understated the message
    if raw is None:
        record.status = Status.REJECTED
        store(
            record,
            "last_error",
            Text(texts.MESSAGE_TOO_LARGE, size=max(item.size, len(item.raw or b"")), limit=limit),
        )
        record.finished_at = None
    else:
        record.raw = raw
        record.sha256 = hashlib.sha256(raw).hexdigest()
    record.warnings = stored_all(warnings)
    record.dedup_key = dedup_key(
        mailbox_id=mailbox_id,
        message_id=fields.message_id,
        date=fields.date,
        sha256=record.sha256,
        folder=folder,
        uidvalidity=uidvalidity,
        uid=item.uid,
    )
    return record


def _unreadable_record(
    *, mailbox_id: int, folder: str, uidvalidity: int, item: Fetched, error: BaseException
) -> InboundMessage:
    return InboundMessage(
        mailbox_id=mailbox_id,
        folder=folder,
        uidvalidity=uidvalidity,
        uid=item.uid,
        size=item.size,
        status=Status.REJECTED,
        **stored("last_error", Text(texts.NOT_RECORDED, error=error_text(error))),
        dedup_key=dedup_key(
            mailbox_id=mailbox_id,
            message_id="",
            date="",
            sha256="",
            folder=folder,
            uidvalidity=uidvalidity,
            uid=item.uid,
        ),
    )


def _record_or_unreadable(
    mailbox_id: int, folder: str, uidvalidity: int, item: Fetched
) -> InboundMessage:
    try:
        return _build_record(
            mailbox_id=mailbox_id, folder=folder, uidvalidity=uidvalidity, item=item
        )
    except Exception as exc:  # never lose a message to a parsing surprise
        logger.exception(
            "cannot read message mailbox_id=%s uid=%s",
            mailbox_id,
            item.uid,
            extra={"action": "message_unreadable", "mailbox_id": mailbox_id},
        )
        return _unreadable_record(
            mailbox_id=mailbox_id, folder=folder, uidvalidity=uidvalidity, item=item, error=exc
        )


def messages_record(
    *, lease: Lease, folder: str, uidvalidity: int, fetched: list[Fetched]
) -> list[InboundMessage]:
    """Records a fetched batch and advances the checkpoint in one fenced transaction.

    Returns the new records. Messages already recorded (same dedup key and content) are
    skipped; the same dedup key with other content is recorded as REJECTED with the
    reason. Processing is enqueued after commit.
    """
    mailbox_id = lease.mailbox_id
    # Built before the transaction: reading headers is bounded (mime.header_fields), but
    # nothing from the wire is read while the lease and checkpoint rows are locked.
    built = [
        (item, _record_or_unreadable(mailbox_id, folder, uidvalidity, item))
        for item in sorted(fetched, key=lambda f: f.uid)
    ]
    with transaction.atomic():
        fence(lease)
        crash_point("record_after_fence")
        checkpoint = MailboxCheckpoint.objects.select_for_update().get(
            mailbox_id=mailbox_id, folder=folder
        )
        if checkpoint.uidvalidity != uidvalidity:
            raise UidValidityChanged(
                Text(
                    texts.UIDVALIDITY_MISMATCH,
                    checkpoint=str(checkpoint.uidvalidity),
                    server=str(uidvalidity),
                )
            )
        fresh = [(item, record) for item, record in built if item.uid > checkpoint.last_uid]
        records = [record for _item, record in fresh]
        records = _drop_duplicates(records)
        created = _insert(records)
        if fresh:
            checkpoint.last_uid = fresh[-1][0].uid
            checkpoint.save(update_fields=["last_uid", "updated_at"])
        crash_point("record_before_commit")
        to_process = [r.pk for r in created if r.status == Status.RECEIVED]
        arrived = {item.uid: item.internal_date for item, _record in fresh}

        def committed() -> None:
            # Counted once the records are durable, before anything else after commit.
            for record in created:
                metrics.MESSAGES_RECORDED.labels(status=record.status).inc()
                metrics.observe_arrival(arrived.get(record.uid))

        transaction.on_commit(committed)

        def after_commit() -> None:
            crash_point("record_before_enqueue")
            processing.enqueue_processing(to_process)

        transaction.on_commit(after_commit)
    crash_point("record_after_commit")
    for record in created:
        if record.status == Status.REJECTED:
            logger.warning(
                "message rejected mailbox_id=%s uid=%s message_id=%s: %s",
                mailbox_id,
                record.uid,
                record.pk,
                record.last_error,
                extra={
                    "action": "message_rejected",
                    "mailbox_id": mailbox_id,
                    "message_id": record.pk,
                },
            )
    return created


def _drop_duplicates(records: list[InboundMessage]) -> list[InboundMessage]:
    """Skips records already stored; turns same-key-other-content into REJECTED."""
    existing = dict(
        InboundMessage.objects.filter(dedup_key__in=[r.dedup_key for r in records]).values_list(
            "dedup_key", "pk"
        )
    )
    known_sha = dict(
        InboundMessage.objects.filter(pk__in=existing.values()).values_list("pk", "sha256")
    )
    seen: dict[str, tuple[int | str, str]] = {
        key: (pk, known_sha.get(pk, "")) for key, pk in existing.items()
    }
    kept = []
    for record in records:
        first = seen.get(record.dedup_key)
        if first is None:
            seen[record.dedup_key] = (Text(texts.FIRST_BY_UID, uid=str(record.uid)), record.sha256)
            kept.append(record)
            continue
        first_ref, first_sha = first
        if first_sha == record.sha256 or not record.sha256:
            logger.info(
                "duplicate skipped mailbox_id=%s uid=%s (already recorded as %s)",
                record.mailbox_id,
                record.uid,
                first_ref,
                extra={"action": "duplicate_skipped", "mailbox_id": record.mailbox_id},
            )
            continue
        conflict = _conflict_key(record.dedup_key, record.sha256)
        if conflict in seen or InboundMessage.objects.filter(dedup_key=conflict).exists():
            continue
        seen[conflict] = (Text(texts.FIRST_BY_UID, uid=str(record.uid)), record.sha256)
        record.dedup_key = conflict
        record.status = Status.REJECTED
        store(
            record,
            "last_error",
            Text(texts.DUPLICATE_MESSAGE_ID, message_id=record.message_id, first=str(first_ref)),
        )
        kept.append(record)
    return kept


def _insert(records: list[InboundMessage]) -> list[InboundMessage]:
    """Inserts the records; their raw bytes follow as binary parameters."""
    if not records:
        return []
    raws = {id(record): record.raw for record in records}
    for record in records:
        record.raw = None
    created = _insert_rows(records)
    connection.ensure_connection()
    import psycopg

    with psycopg.Cursor(connection.connection) as cursor:
        for record in created:
            raw = raws[id(record)]
            if raw is not None:
                _store_raw(cursor, record.pk, raw)
            record.raw = raw
    return created


# A raw message over this size is stored in pieces of it (see sql.STORE_RAW_MESSAGE):
# the listener's memory for the largest message goes from 3.2x its size to 2.2x.
RAW_PIECE_BYTES = 4 * 1024 * 1024


def _store_raw(cursor: psycopg.Cursor[Any], pk: int, raw: bytes | memoryview) -> None:
    view = memoryview(raw)
    cursor.execute(sql.STORE_RAW_MESSAGE, [view[:RAW_PIECE_BYTES], pk])
    for start in range(RAW_PIECE_BYTES, len(view), RAW_PIECE_BYTES):
        cursor.execute(sql.APPEND_RAW_MESSAGE, [view[start : start + RAW_PIECE_BYTES], pk])


def _insert_rows(records: list[InboundMessage]) -> list[InboundMessage]:
    try:
        with transaction.atomic():
            return InboundMessage.objects.bulk_create(records)
    except IntegrityError:
        pass
    # Isolate whatever the database refused, one savepoint per record.
    created = []
    for record in records:
        try:
            with transaction.atomic():
                record.pk = None
                record.save(force_insert=True)
                created.append(record)
        except IntegrityError as exc:
            logger.warning(
                "record refused mailbox_id=%s uid=%s: %s", record.mailbox_id, record.uid, exc
            )
    return created
