"""State changes of price lists: creating imports, running them, storing their rows.

PriceImport: PENDING → RUNNING → SUCCEEDED | PARTIAL | FAILED. A run claims the import
with a conditional UPDATE, reads and parses the file outside any transaction, then
stores rows, counts, diff and status in one transaction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from itertools import islice, repeat
from operator import itemgetter, lt

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Now

from pricefeed import parsing
from pricefeed.claims import ClaimedWork, SweepResult
from pricefeed.copyfeed import CopyFeeder
from pricefeed.matching import Attachment, member_key

from .models import PriceImport, PriceItem, PriceListConfig, item_key

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


def _message_raw(message_id: int) -> bytes:
    """The stored raw message. On PostgreSQL it is read in binary: the ORM's text
    transfer sends bytea as hex (twice the size) and took ~1.4 s for a 100 MB message."""
    from mailboxes.models import InboundMessage

    if connection.vendor == "postgresql":
        table = InboundMessage._meta.db_table
        import psycopg

        connection.ensure_connection()
        # Django's cursors bind on the client side, which cannot ask for binary results.
        with psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(f"SELECT raw FROM {table} WHERE id = %s", [message_id], binary=True)
            row = cursor.fetchone()
        raw = row[0] if row else None
    else:
        raw = InboundMessage.objects.values_list("raw", flat=True).get(pk=message_id)
    if raw is None:
        raise parsing.ParseError("the message's raw bytes are not stored")
    return bytes(raw)


def import_file_bytes(price_import: PriceImport) -> bytes:
    """The bytes of the file an import reads: the attachment, or one file inside it."""
    return _import_file(price_import)[0]


def _import_file(price_import: PriceImport) -> tuple[bytes, str]:
    """(bytes of the file an import reads, their sha256)."""
    from mailboxes.mime import attachment_payload

    part, _, path = price_import.attachment_key.partition("/")
    raw = _message_raw(price_import.message_id)
    payload = attachment_payload(raw, part)
    digest = hashlib.sha256(payload).hexdigest()
    if not path and price_import.sha256 and digest != price_import.sha256:
        # The attachment's digest, recorded when the import was created, must match:
        # if the quick MIME reader cut out another part, let the email parser decide.
        payload = attachment_payload(raw, part, quick=False)
        digest = hashlib.sha256(payload).hexdigest()
    del raw
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
        return payload, digest
    for member in parsing.expand(payload, price_import.filename, limits):
        if member_key(part, member.path) == price_import.attachment_key:
            return member.data, hashlib.sha256(member.data).hexdigest()
    raise parsing.ParseError(f"file {path!r} is no longer in the archive")


def price_import_run(*, import_id: int, worker: str) -> str | None:
    """Reads, parses and stores one price-list file; idempotent (only PENDING runs).

    Returns the final status, or None when there was nothing to do.
    """
    if not price_import_claim(import_id=import_id, worker=worker):
        return None
    try:
        price_import = (
            PriceImport.objects.select_related("config", "message")
            .defer("message__raw")
            .get(pk=import_id)
        )
        fingerprint: dict = {}
        try:
            data, digest = _import_file(price_import)
            fingerprint = {"size": len(data), "sha256": digest}
            return _parse_and_store(price_import, worker, data, fingerprint)
        except parsing.ParseError as exc:
            _store_failure(price_import, worker, str(exc), fingerprint)
            return Status.FAILED
    except ImportClaimLost:
        logger.warning("import claim lost id=%s", import_id)
        return None
    except Exception as exc:
        logger.exception("import failed id=%s", import_id)
        return price_import_retry_or_fail(import_id=import_id, worker=worker, error=exc)


class _Discard(Exception):
    """The parsed rows are not to be kept (the import fails as a whole)."""

    def __init__(self, parsed: parsing.ParsedFile) -> None:
        super().__init__()
        self.parsed = parsed


def _parse_and_store(price_import: PriceImport, worker: str, data: bytes, fingerprint: dict) -> str:
    """Parses the file straight into the items table and stores the outcome, all in one
    transaction.

    Rows go to PostgreSQL (COPY) in chunks while the file is read, so the server stores
    one chunk while Python parses the next (the machines have two cores). A ParseError,
    a verdict of FAILED or a lost claim rolls the rows back; a FAILED verdict is then
    stored, without rows, by _store().
    """
    options = options_for(price_import.config)
    limits = parsing.Limits.from_settings()
    try:
        with transaction.atomic(durable=True):
            with _item_writer(price_import.pk) as writer:
                parsed = parsing.parse(data, options, limits, sink=writer)
            status, reason = _verdict(price_import.config, parsed)
            if status == Status.FAILED:
                raise _Discard(parsed)
            _finish(
                price_import,
                worker,
                parsed,
                status,
                reason,
                fingerprint,
                repeated_skus=writer.repeated_skus,
                rows_digest=writer.digest,
            )
    except _Discard as discard:
        return _store(price_import, worker, discard.parsed, fingerprint)
    _log_finished(price_import, status, parsed)
    return status


def _verdict(config: PriceListConfig, parsed: parsing.ParsedFile) -> tuple[str, str]:
    # rows_failed counts every failed row; parsed.errors keeps at most max_errors.
    ok, failed = parsed.rows_ok, parsed.rows_failed
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
    """Stores an outcome whose rows are in ``parsed.rows`` (or that keeps none)."""
    status, reason = _verdict(price_import.config, parsed)
    with transaction.atomic(durable=True):
        if status != Status.FAILED and parsed.rows:
            _insert_items(price_import.pk, parsed.rows)
        _finish(price_import, worker, parsed, status, reason, fingerprint, repeated_skus=True)
    _log_finished(price_import, status, parsed)
    return status


def _finish(
    price_import: PriceImport,
    worker: str,
    parsed: parsing.ParsedFile,
    status: str,
    reason: str,
    fingerprint: dict,
    *,
    repeated_skus: bool,
    rows_digest: str | None = None,
) -> None:
    """Diff, counts, status and the outbox event; inside the caller's transaction, after
    the rows are stored. ``repeated_skus`` is False only when no SKU repeats;
    ``rows_digest`` is _ItemWriter.digest of the stored rows, None when not known."""
    errors = [{"row": row, "error": text} for row, text in parsed.errors[:1000]]
    info = {
        "sheet": parsed.sheet,
        "encoding": parsed.encoding,
        "delimiter": parsed.delimiter,
        "header_row": parsed.header_row,
        "columns": parsed.columns,
        "errors_total": parsed.rows_failed,
        # The diff of the next import reads this import's rows as they are when False.
        "repeated_skus": repeated_skus,
        # Equal digests: the same SKUs and prices as this import's, and no diff.
        "rows_digest": rows_digest,
    }
    diff = (
        _diff(price_import, parsed.rows_ok, repeated_skus=repeated_skus, rows_digest=rows_digest)
        if status != Status.FAILED
        else {}
    )
    _finish_fields(
        price_import,
        worker,
        status=status,
        format=parsed.format,
        rows_total=parsed.rows_total,
        rows_ok=parsed.rows_ok if status != Status.FAILED else 0,
        rows_failed=parsed.rows_failed,
        rows_skipped=parsed.skipped_rows,
        errors=errors,
        diff=diff,
        parse_info=info,
        last_error=reason,
        **fingerprint,
    )
    publish_outcome(price_import.pk)


def _log_finished(price_import: PriceImport, status: str, parsed: parsing.ParsedFile) -> None:
    logger.info(
        "import finished id=%s status=%s rows=%s failed=%s",
        price_import.pk,
        status,
        parsed.rows_ok,
        parsed.rows_failed,
        extra={"action": "import_finished", "import_id": price_import.pk},
    )


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_CHUNK = 20_000
_COPY_COLUMNS = "id, price_import_id, row_number, sku, name, price, currency, quantity"


def _copy_text(import_id: int, rows: list[tuple]) -> str:
    """Rows as COPY text-format lines: formatting lines here is ~5x faster than letting
    the driver adapt every value of every row.

    One f-string per row without escaping first; the chunk is used as is when it holds
    exactly 6 tabs and 1 newline per row and no backslash or carriage return (no text
    field held one: nearly always), else it is made again with every text escaped.
    Prices are never None; a None quantity prints as "None" at the end of its line and
    becomes \\N. ``!s`` calls str() directly: half the time of Decimal.__format__.
    """
    key = item_key(import_id, 0)
    if rows:
        item_key(import_id, rows[-1][0])  # rows come in file order: the last is in range
    prefix = f"\t{import_id}\t"
    text = "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku}\t{name}\t{price!s}\t{currency}\t"
            f"{quantity!s}\n"
            for row_number, sku, name, price, currency, quantity in rows
        ]
    )
    if _copy_safe(text, len(rows)):
        return text.replace("\tNone\n", "\t\\N\n")
    null = "\\N"
    return "".join(
        [
            f"{key + row_number}{prefix}{row_number}\t{sku.translate(_COPY_ESCAPES)}\t"
            f"{name.translate(_COPY_ESCAPES)}\t{null if price is None else price}\t"
            f"{currency.translate(_COPY_ESCAPES)}\t{null if quantity is None else quantity}\n"
            for row_number, sku, name, price, currency, quantity in rows
        ]
    )


def _copy_safe(text: str, rows: int) -> bool:
    """Whether unescaped COPY lines are exactly ``rows`` lines of 8 fields: no text field
    held a tab, newline, carriage return or backslash."""
    return (
        text.count("\t") == 7 * rows
        and text.count("\n") == rows
        and "\\" not in text
        and "\r" not in text
    )


def _block_copy_text(import_id: int, block: parsing.RowBlock) -> str:
    """A RowBlock as COPY text-format lines, joined a column at a time (a third of the
    time of formatting row tuples). Checked as in _copy_text: made again with every
    text escaped when some text holds a tab, newline, carriage return or backslash."""
    text = _block_lines(import_id, block, escape=False)
    if _copy_safe(text, len(block)):
        return text
    return _block_lines(import_id, block, escape=True)


def _block_lines(import_id: int, block: parsing.RowBlock, *, escape: bool) -> str:
    def texts(value: list[str] | str) -> Iterable[str]:
        if isinstance(value, str):
            return repeat(value.translate(_COPY_ESCAPES) if escape else value)
        return [v.translate(_COPY_ESCAPES) for v in value] if escape else value

    quantities = block.quantities
    first = block.first_row
    key = item_key(import_id, first)
    item_key(import_id, first + len(block) - 1)  # in range
    columns = (
        map(str, range(key, key + len(block))),
        repeat(str(import_id)),
        map(str, range(first, first + len(block))),
        texts(block.skus),
        texts(block.names),
        block.prices,  # decimal text: nothing to escape
        texts(block.currencies),
        repeat(_NULL) if quantities is None else map(_NULL_TEXT.get, quantities, quantities),
    )
    # The lists end the lines; repeat() stands in for a value every row shares.
    return "\n".join(map("\t".join, zip(*columns, strict=False))) + "\n"


_SKU = itemgetter(1)
_PRICE = itemgetter(3)
_NULL = "\\N"
_NULL_TEXT = {None: _NULL}


class _ItemWriter:
    """A sink for parse(): stores row tuples through ``write_rows`` and RowBlocks through
    ``write_block``, and notes what the diff needs to know about them.

    ``repeated_skus``: while SKUs come in strictly ascending order (a cheap comparison
    of neighbours) none can repeat. Once one is out of order, the hashes of all SKUs
    (kept from the start, 8 bytes each: the SKUs themselves took ~100 MB per million
    rows) are counted at the end; fewer distinct hashes than rows reads as a repeated
    SKU. The diff then reads each import's last row per SKU instead of its rows as they
    are, which is right whether or not one repeats: a hash collision only costs a sort.

    ``digest``: a SHA-256 of the SKU and price sequence as stored. Two imports with the
    same digest hold the same SKUs with the same prices in the same order, so the diff
    between them is empty without reading a row.
    """

    def __init__(
        self,
        write_rows: Callable[[list[tuple]], None],
        write_block: Callable[[parsing.RowBlock], None],
    ) -> None:
        self._write_rows = write_rows
        self._write_block = write_block
        self.rows = 0
        self._ascending = True
        self._last_sku: str | None = None
        self._hashes = array("q")
        self._sku_hash = hashlib.sha256()
        self._price_hash = hashlib.sha256()

    def __call__(self, rows: list[tuple]) -> None:
        if rows:
            self._note(list(map(_SKU, rows)), list(map(str, map(_PRICE, rows))))
        self._write_rows(rows)

    def take_block(self, block: parsing.RowBlock) -> None:
        self._note(block.skus, block.prices)
        self._write_block(block)

    def _note(self, skus: list[str], prices: list[str]) -> None:
        self.rows += len(skus)
        # Escaped, a SKU holds no newline: the joined text splits back into the same
        # SKUs, and the digest of one sequence is never that of another.
        sku_text = "\n".join(skus) + "\n"
        if "\\" in sku_text or "\r" in sku_text or sku_text.count("\n") != len(skus):
            sku_text = "\n".join(sku.translate(_COPY_ESCAPES) for sku in skus) + "\n"
        self._sku_hash.update(sku_text.encode())
        self._price_hash.update(("\n".join(prices) + "\n").encode())
        self._hashes.extend(map(hash, skus))
        if self._ascending:
            last = self._last_sku
            if (last is None or last < skus[0]) and all(map(lt, skus, islice(skus, 1, None))):
                self._last_sku = skus[-1]
            else:
                self._ascending = False

    @property
    def repeated_skus(self) -> bool:
        return not self._ascending and len(set(self._hashes)) != len(self._hashes)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self._sku_hash.digest() + self._price_hash.digest()).hexdigest()


@contextlib.contextmanager
def _item_writer(import_id: int) -> Iterator[_ItemWriter]:
    """A sink for parse(): on PostgreSQL each list of rows goes into one open COPY as it
    comes, through a CopyFeeder (the server stores it while Python reads on); elsewhere
    rows are collected and inserted in batches when the block ends. Inside the caller's
    transaction."""
    if connection.vendor != "postgresql":
        collected: list[tuple] = []
        yield _ItemWriter(collected.extend, lambda block: collected.extend(block.rows()))
        _insert_items(import_id, collected)
        return
    table = PriceItem._meta.db_table
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({_COPY_COLUMNS}) FROM STDIN") as copy:
            # The server stores one chunk while the parser reads the next.
            feeder = CopyFeeder(copy.write)

            def write_rows(rows: list[tuple]) -> None:
                for start in range(0, len(rows), _COPY_CHUNK):
                    feeder.write(_copy_text(import_id, rows[start : start + _COPY_CHUNK]))

            def write_block(block: parsing.RowBlock) -> None:
                feeder.write(_block_copy_text(import_id, block))

            try:
                yield _ItemWriter(write_rows, write_block)
            except BaseException:
                feeder.abandon()
                raise
            feeder.close()


def _insert_items(import_id: int, rows: list[tuple]) -> None:
    """Stores rows with COPY on PostgreSQL, in batches elsewhere."""
    if connection.vendor == "postgresql":
        table = PriceItem._meta.db_table
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {table} ({_COPY_COLUMNS}) FROM STDIN") as copy:
                for start in range(0, len(rows), _COPY_CHUNK):
                    copy.write(_copy_text(import_id, rows[start : start + _COPY_CHUNK]))
        return
    PriceItem.objects.bulk_create(
        (
            PriceItem(
                id=item_key(import_id, row_number),
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


def _diff(
    price_import: PriceImport,
    rows_ok: int,
    *,
    repeated_skus: bool = True,
    rows_digest: str | None = None,
) -> dict:
    """Added, removed and re-priced SKUs against the previous import of the same config.

    Computed in the database after the rows are stored, in one hash full join of the two
    imports' items: pulling a million previous rows into Python took ~5 s. Within one
    file the last row of a repeated SKU counts, as in the file; an import known to have
    no repeated SKU (``repeated_skus`` False here, ``parse_info["repeated_skus"]`` False
    for the previous one) is joined as it is, without sorting it first. When both
    imports' ``rows_digest`` are known and equal, their SKUs and prices are the same,
    row for row, and nothing is read: a supplier often sends the same list again.
    """
    previous = previous_import(price_import)
    if previous is None:
        return {"previous_import": None, "added": rows_ok, "removed": 0, "changed": 0}
    if rows_digest is not None and (previous.parse_info or {}).get("rows_digest") == rows_digest:
        return {
            "previous_import": previous.pk,
            "added": 0,
            "removed": 0,
            "changed": 0,
            "added_sample": [],
            "removed_sample": [],
            "changed_sample": [],
        }
    snapshot = price_import.config.mode == PriceListConfig.Mode.SNAPSHOT
    table = PriceItem._meta.db_table
    postgresql = connection.vendor == "postgresql"

    # An import's items are a range of the primary key (models.item_key), in row order.
    of_import = "id >= %s AND id < %s"

    def items(repeated: bool) -> str:
        if not repeated:
            return f"SELECT sku, price FROM {table} WHERE {of_import}"
        if postgresql:
            # "C" collation: byte order is all DISTINCT ON needs, and sorts several
            # times faster than the database's linguistic collation.
            return (
                f'SELECT DISTINCT ON (sku COLLATE "C") sku, price FROM {table} '
                f'WHERE {of_import} ORDER BY sku COLLATE "C", id DESC'
            )
        return (
            f"SELECT sku, price FROM {table} WHERE id IN "
            f"(SELECT MAX(id) FROM {table} WHERE {of_import} GROUP BY sku)"
        )

    def key_range(import_id: int) -> list[int]:
        return [item_key(import_id, 0), item_key(import_id + 1, 0)]

    previous_repeated = (previous.parse_info or {}).get("repeated_skus") is not False
    # d: one row per difference; then its counts and the first few of each kind.
    sql = f"""
        WITH n AS ({items(repeated_skus)}), o AS ({items(previous_repeated)}),
        d AS (
            SELECT CASE WHEN o.sku IS NULL THEN 'added' WHEN n.sku IS NULL THEN 'removed'
                   ELSE 'changed' END AS kind,
                   COALESCE(n.sku, o.sku) AS sku, o.price AS old, n.price AS new
            FROM n FULL JOIN o ON o.sku = n.sku
            WHERE o.sku IS NULL OR (n.sku IS NULL AND %s)
               OR (n.sku IS NOT NULL AND o.sku IS NOT NULL
                   AND (n.price <> o.price OR (n.price IS NULL) <> (o.price IS NULL)))
        )
        SELECT kind, COUNT(*), NULL, NULL, NULL FROM d GROUP BY kind
        UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM d
                                 WHERE kind = 'added' LIMIT {DIFF_SAMPLE}) a
        UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM d
                                 WHERE kind = 'removed' LIMIT {DIFF_SAMPLE}) r
        UNION ALL SELECT * FROM (SELECT kind, 0, sku, old, new FROM d
                                 WHERE kind = 'changed' LIMIT {DIFF_SAMPLE}) c
    """
    counts = {"added": 0, "removed": 0, "changed": 0}
    samples: dict[str, list] = {"added": [], "removed": [], "changed": []}
    with connection.cursor() as cursor:
        if postgresql:
            # Two imports of a million rows hash in ~100 MB; at the default 4 MB the
            # join and sorts spill to disk in batches. The rows COPYed in this
            # transaction have no statistics yet, and the planner then picked a merge
            # join that sorts both imports by SKU in the database's collation (2.7 s
            # for 1M x 1M against 1.7 s hashed). For this transaction only.
            cursor.execute("SET LOCAL work_mem = '256MB'")
            cursor.execute("SET LOCAL enable_mergejoin = off")
        cursor.execute(sql, [*key_range(price_import.pk), *key_range(previous.pk), snapshot])
        for kind, count, sku, old, new in cursor.fetchall():
            if sku is None:
                counts[kind] = count
            else:
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

    price_import = (
        PriceImport.objects.select_related("message").defer("message__raw").get(pk=import_id)
    )
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
