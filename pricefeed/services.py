"""State changes of price lists: creating imports, running them, storing their rows.

PriceImport: PENDING → RUNNING → SUCCEEDED | PARTIAL | FAILED. A run claims the import
with a conditional UPDATE, reads and parses the file outside any transaction, then
stores rows, counts, diff and status in one transaction.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Iterable, Sequence
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Now

from pricefeed import parsing
from pricefeed.claims import ClaimedWork, SweepResult
from pricefeed.matching import Attachment, member_key

from .models import PriceImport, PriceItem, PriceListConfig

logger = logging.getLogger(__name__)

Status = PriceImport.Status
IMPORT_TASK = "pricefeed.tasks.run_import"
ARCHIVES = ("zip", "gzip")
DIFF_SAMPLE = 50


class ImportClaimLost(Exception):
    """The import is no longer claimed by this worker."""


def enqueue_imports(import_ids: Iterable[int]) -> None:
    from django_q.tasks import async_task

    for import_id in import_ids:
        async_task(IMPORT_TASK, import_id, task_name=f"run_import {import_id}")


# -- creating ---------------------------------------------------------------------------


def attachments_inspect(
    attachments: Sequence[Attachment], payloads: dict[str, bytes]
) -> list[Attachment]:
    """Lists the files inside archive attachments (zip, gzip; nested), under the input
    limits; an archive that is refused carries the reason instead."""
    limits = parsing.Limits.from_settings()
    inspected = []
    for attachment in attachments:
        payload = payloads.get(attachment.key, b"")
        if parsing.detect_format(payload) in ARCHIVES:
            try:
                members = parsing.expand(payload, attachment.filename, limits)
            except parsing.ParseError as exc:
                attachment = dataclasses.replace(attachment, archive_error=str(exc))
            else:
                attachment = dataclasses.replace(attachment, members=tuple(m.path for m in members))
        inspected.append(attachment)
    return inspected


def price_imports_create(*, message_id: int, items: list[tuple[int, Attachment, str]]) -> list[int]:
    """Creates one PENDING PriceImport per (config, file); existing ones are kept.

    ``items`` are (config id, attachment, file key). Called inside the transaction that
    finishes the message, so a message is DONE exactly when its imports exist. Returns
    the ids of the imports that are still PENDING (new or not yet run).
    """
    if not items:
        return []
    PriceImport.objects.bulk_create(
        [
            PriceImport(
                message_id=message_id,
                config_id=config_id,
                attachment_key=key,
                filename=attachment.filename if key == attachment.key else key.rsplit("/", 1)[-1],
                content_type=attachment.content_type if key == attachment.key else "",
                size=attachment.size if key == attachment.key else 0,
                sha256=attachment.sha256 if key == attachment.key else "",
            )
            for config_id, attachment, key in items
        ],
        ignore_conflicts=True,
    )
    return list(
        PriceImport.objects.filter(message_id=message_id, status=Status.PENDING).values_list(
            "pk", flat=True
        )
    )


# -- running ----------------------------------------------------------------------------


def price_import_claim(*, import_id: int, worker: str) -> bool:
    """PENDING (due) → RUNNING; False when it is not ours to run."""
    return IMPORT_WORK.claim(pk=import_id, worker=worker, started_at=Now())


def options_for(config: PriceListConfig) -> parsing.ParseOptions:
    return parsing.ParseOptions(
        columns=dict(config.columns or {}),
        sheet=config.sheet,
        number_format=config.number_format,
        default_currency=config.default_currency,
    )


def import_file_bytes(price_import: PriceImport) -> bytes:
    """The bytes of the file an import reads: the attachment, or one file inside it."""
    from mailboxes.mime import attachment_payload

    part, _, path = price_import.attachment_key.partition("/")
    payload = attachment_payload(bytes(price_import.message.raw), part)
    limits = parsing.Limits.from_settings()
    if not path:
        if parsing.detect_format(payload) in ARCHIVES:
            # Imported whole only when it could not be opened when the message was
            # matched: opening it again gives the reason (or says what changed).
            parsing.expand(payload, price_import.filename, limits)
            raise parsing.ParseError(
                "the archive can be opened now (limits changed?): reprocess the message "
                "to import the files inside it"
            )
        return payload
    for member in parsing.expand(payload, price_import.filename, limits):
        if member_key(part, member.path) == price_import.attachment_key:
            return member.data
    raise parsing.ParseError(f"file {path!r} is no longer in the archive")


def price_import_run(*, import_id: int, worker: str) -> str | None:
    """Reads, parses and stores one price-list file; idempotent (only PENDING runs).

    Returns the final status, or None when there was nothing to do.
    """
    if not price_import_claim(import_id=import_id, worker=worker):
        return None
    try:
        price_import = PriceImport.objects.select_related("config", "message").get(pk=import_id)
        fingerprint: dict = {}
        try:
            data = import_file_bytes(price_import)
            fingerprint = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            parsed = parsing.parse(
                data, options_for(price_import.config), parsing.Limits.from_settings()
            )
        except parsing.ParseError as exc:
            _store_failure(price_import, worker, str(exc), fingerprint)
            return Status.FAILED
        return _store(price_import, worker, parsed, fingerprint)
    except ImportClaimLost:
        logger.warning("import claim lost id=%s", import_id)
        return None
    except Exception as exc:
        logger.exception("import failed id=%s", import_id)
        return price_import_retry_or_fail(import_id=import_id, worker=worker, error=exc)


def _verdict(config: PriceListConfig, parsed: parsing.ParsedFile) -> tuple[str, str]:
    ok, failed = len(parsed.rows), len(parsed.errors)
    if not ok:
        return Status.FAILED, "no valid price rows" + (
            f" ({failed} row(s) failed)" if failed else ""
        )
    if parsed.rows_total and failed * 100 > config.max_bad_rows_percent * parsed.rows_total:
        return Status.FAILED, (
            f"{failed} of {parsed.rows_total} rows failed, over the limit of "
            f"{config.max_bad_rows_percent}%"
        )
    return (Status.PARTIAL if failed else Status.SUCCEEDED), ""


def _finish_fields(price_import: PriceImport, worker: str, **fields: object) -> None:
    done = PriceImport.objects.filter(
        pk=price_import.pk, status=Status.RUNNING, claimed_by=worker
    ).update(claimed_by="", claimed_at=None, next_attempt_at=None, finished_at=Now(), **fields)
    if not done:
        raise ImportClaimLost(f"import {price_import.pk} is no longer claimed by {worker}")


def _store_failure(price_import: PriceImport, worker: str, reason: str, fingerprint: dict) -> None:
    with transaction.atomic(durable=True):
        _finish_fields(
            price_import, worker, status=Status.FAILED, last_error=reason[:5000], **fingerprint
        )
        publish_outcome(price_import.pk)
    logger.warning(
        "import failed id=%s: %s",
        price_import.pk,
        reason,
        extra={"action": "import_failed", "import_id": price_import.pk},
    )


def _store(
    price_import: PriceImport, worker: str, parsed: parsing.ParsedFile, fingerprint: dict
) -> str:
    status, reason = _verdict(price_import.config, parsed)
    errors = [{"row": row, "error": text} for row, text in parsed.errors[:1000]]
    info = {
        "sheet": parsed.sheet,
        "encoding": parsed.encoding,
        "delimiter": parsed.delimiter,
        "header_row": parsed.header_row,
        "columns": parsed.columns,
        "errors_total": len(parsed.errors),
    }
    with transaction.atomic(durable=True):
        diff = {}
        if status != Status.FAILED:
            _insert_items(price_import.pk, parsed.rows)
            diff = _diff(price_import, parsed.rows)
        _finish_fields(
            price_import,
            worker,
            status=status,
            format=parsed.format,
            rows_total=parsed.rows_total,
            rows_ok=len(parsed.rows) if status != Status.FAILED else 0,
            rows_failed=len(parsed.errors),
            rows_skipped=parsed.skipped_rows,
            errors=errors,
            diff=diff,
            parse_info=info,
            last_error=reason,
            **fingerprint,
        )
        publish_outcome(price_import.pk)
    logger.info(
        "import finished id=%s status=%s rows=%s failed=%s",
        price_import.pk,
        status,
        len(parsed.rows),
        len(parsed.errors),
        extra={"action": "import_finished", "import_id": price_import.pk},
    )
    return status


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_CHUNK = 20_000


def _copy_text(import_id: int, rows: list[tuple]):
    """COPY text format, in chunks: formatting lines here is ~5x faster than letting the
    driver adapt every value of every row."""
    null = "\\N"
    prefix = f"{import_id}\t"
    for start in range(0, len(rows), _COPY_CHUNK):
        lines = []
        for row_number, sku, name, price, currency, quantity in rows[start : start + _COPY_CHUNK]:
            lines.append(
                f"{prefix}{row_number}\t{sku.translate(_COPY_ESCAPES)}\t"
                f"{name.translate(_COPY_ESCAPES)}\t{null if price is None else price}\t"
                f"{currency.translate(_COPY_ESCAPES)}\t{null if quantity is None else quantity}\n"
            )
        yield "".join(lines)


def _insert_items(import_id: int, rows: list[tuple]) -> None:
    """Stores rows with COPY on PostgreSQL, in batches elsewhere."""
    if connection.vendor == "postgresql":
        table = PriceItem._meta.db_table
        copy_sql = (
            f"COPY {table} (price_import_id, row_number, sku, name, price, currency, quantity) "
            "FROM STDIN"
        )
        with connection.cursor() as cursor, cursor.cursor.copy(copy_sql) as copy:
            for chunk in _copy_text(import_id, rows):
                copy.write(chunk)
        return
    PriceItem.objects.bulk_create(
        (
            PriceItem(
                price_import_id=import_id,
                row_number=row_number,
                sku=sku,
                name=name,
                price=price,
                currency=currency,
                quantity=quantity,
            )
            for row_number, sku, name, price, currency, quantity in rows
        ),
        batch_size=2000,
    )


def previous_import(price_import: PriceImport) -> PriceImport | None:
    """The last SUCCEEDED or PARTIAL import of the same config from an earlier message."""
    message = price_import.message
    return (
        PriceImport.objects.filter(
            config_id=price_import.config_id,
            status__in=[Status.SUCCEEDED, Status.PARTIAL],
        )
        .filter(
            Q(message__received_at__lt=message.received_at)
            | Q(message__received_at=message.received_at, message_id__lt=message.pk)
            | Q(message_id=message.pk, pk__lt=price_import.pk)
        )
        .order_by("-message__received_at", "-message_id", "-pk")
        .first()
    )


def _diff(price_import: PriceImport, rows: list[tuple]) -> dict:
    """Added, removed and re-priced SKUs against the previous import of the same config.

    Computed in the database after the rows are stored (hash joins over the two
    imports' items): pulling a million previous rows into Python took ~5 s. Within one
    file the last row of a repeated SKU counts, as in the file.
    """
    previous = previous_import(price_import)
    if previous is None:
        return {"previous_import": None, "added": len(rows), "removed": 0, "changed": 0}
    snapshot = price_import.config.mode == PriceListConfig.Mode.SNAPSHOT
    table = PriceItem._meta.db_table
    last = (
        f"SELECT DISTINCT ON (sku) sku, price FROM {table} WHERE price_import_id = %s "
        "ORDER BY sku, row_number DESC"
    )
    if connection.vendor != "postgresql":
        last = (
            f"SELECT sku, price FROM {table} i WHERE price_import_id = %s AND row_number = "
            f"(SELECT MAX(row_number) FROM {table} j WHERE j.price_import_id = i.price_import_id "
            "AND j.sku = i.sku)"
        )
    sql = f"""
        WITH n AS ({last}), o AS ({last})
        SELECT 'added', n.sku, NULL, n.price FROM n LEFT JOIN o ON o.sku = n.sku
            WHERE o.sku IS NULL
        UNION ALL
        SELECT 'removed', o.sku, o.price, NULL FROM o LEFT JOIN n ON n.sku = o.sku
            WHERE n.sku IS NULL AND %s
        UNION ALL
        SELECT 'changed', n.sku, o.price, n.price FROM n JOIN o ON o.sku = n.sku
            WHERE n.price <> o.price OR (n.price IS NULL) <> (o.price IS NULL)
    """
    counts = {"added": 0, "removed": 0, "changed": 0}
    samples: dict[str, list] = {"added": [], "removed": [], "changed": []}
    with connection.cursor() as cursor:
        cursor.execute(sql, [price_import.pk, previous.pk, snapshot])
        for kind, sku, old, new in cursor:
            counts[kind] += 1
            if len(samples[kind]) < DIFF_SAMPLE:
                samples[kind].append((sku, old, new))
    return {
        "previous_import": previous.pk,
        **counts,
        "added_sample": sorted(sku for sku, _, _ in samples["added"]),
        "removed_sample": sorted(sku for sku, _, _ in samples["removed"]),
        "changed_sample": [
            {"sku": sku, "old": _plain(_decimal(old)), "new": _plain(_decimal(new))}
            for sku, old, new in sorted(samples["changed"])
        ],
    }


def _decimal(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _plain(value: Decimal | None) -> str | None:
    """1234.5000 → "1234.5", 1300 → "1300": how an operator writes a price."""
    return None if value is None else format(value.normalize(), "f")


OUTCOME_EVENT = "price_import.finished"


def publish_outcome(import_id: int) -> None:
    """Announces an import's outcome through the outbox; called inside the transaction
    that stores it, so the event exists exactly when the outcome does."""
    from outbox.services import publish

    price_import = PriceImport.objects.select_related("message").get(pk=import_id)
    diff = price_import.diff or {}
    publish(
        OUTCOME_EVENT,
        price_import,
        {
            "import_id": price_import.pk,
            "status": price_import.status,
            "config_id": price_import.config_id,
            "message_id": price_import.message_id,
            "sender": price_import.message.from_address,
            "filename": price_import.filename,
            "rows_total": price_import.rows_total,
            "rows_ok": price_import.rows_ok,
            "rows_failed": price_import.rows_failed,
            "error": price_import.last_error[:1000],
            "diff": {k: diff.get(k, 0) for k in ("added", "removed", "changed")},
        },
    )


def _describe_import(import_id: int) -> str:
    return repr(PriceImport.objects.values_list("filename", flat=True).get(pk=import_id))


IMPORT_WORK = ClaimedWork(
    model=PriceImport,
    running=Status.RUNNING,
    retry=Status.PENDING,
    failed=Status.FAILED,
    waiting=(Status.PENDING,),
    queued_field="queued_at",
    what="price import",
    describe=_describe_import,
    on_failed=lambda import_id: publish_outcome(import_id),
)


def price_import_retry_or_fail(
    *, import_id: int, worker: str | None, error: BaseException | str
) -> str | None:
    """RUNNING → PENDING with backoff, or FAILED (outcome published, alert) past the limit."""
    return IMPORT_WORK.retry_or_fail(pk=import_id, worker=worker, error=error)


def price_imports_sweep() -> SweepResult:
    """Retries expired import claims and re-enqueues due or forgotten imports."""
    return IMPORT_WORK.sweep(
        claim_timeout=settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT,
        requeue_after=settings.PRICEFEED_REQUEUE_AFTER,
        enqueue=lambda ids: enqueue_imports(ids),
    )


def price_imports_requeue(*, import_ids: Iterable[int]) -> int:
    """Operator action: runs FAILED imports again (they stored no rows)."""
    failed = PriceImport.objects.filter(pk__in=list(import_ids), status=Status.FAILED)
    ids = list(failed.values_list("pk", flat=True))
    moved = failed.filter(pk__in=ids).update(
        status=Status.PENDING, attempts=0, next_attempt_at=None, last_error="", queued_at=Now()
    )
    transaction.on_commit(lambda: enqueue_imports(ids))
    return moved


@dataclasses.dataclass
class PreviewResult:
    name: str
    parsed: parsing.ParsedFile | None = None
    error: str = ""
    verdict: str = ""

    @property
    def sample(self) -> list[tuple]:
        return self.parsed.rows[: self.limit] if self.parsed else []

    @property
    def errors(self) -> list[tuple[int, str]]:
        return self.parsed.errors[: self.limit] if self.parsed else []

    limit: int = 20


def preview_file(
    *, config: PriceListConfig, filename: str, data: bytes, rows: int = 20
) -> list[PreviewResult]:
    """Reads a file the way an import of ``config`` would; stores nothing."""
    limits = parsing.Limits.from_settings()
    if len(data) > limits.max_file_bytes:
        return [
            PreviewResult(filename, error=f"file is over the {limits.max_file_bytes} byte limit")
        ]
    try:
        if parsing.detect_format(data) in ARCHIVES:
            members = [
                (f"{filename}/{m.path}", m.data) for m in parsing.expand(data, filename, limits)
            ]
        else:
            members = [(filename, data)]
    except parsing.ParseError as exc:
        return [PreviewResult(filename, error=str(exc))]
    results = []
    for name, member in members:
        try:
            parsed = parsing.parse(member, options_for(config), limits)
        except parsing.ParseError as exc:
            results.append(PreviewResult(name, error=str(exc), limit=rows))
            continue
        status, reason = _verdict(config, parsed)
        verdict = f"An import would end {status}" + (f": {reason}" if reason else ".")
        results.append(PreviewResult(name, parsed=parsed, verdict=verdict, limit=rows))
    return results
