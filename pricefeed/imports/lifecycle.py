"""The life of a price import: created PENDING, claimed RUNNING, finished SUCCEEDED,
PARTIAL or FAILED; retried with backoff, swept when forgotten, requeued by an operator.

A run claims the import with a conditional UPDATE, reads its file outside any
transaction, then parses it straight into the items table and stores counts, diff,
status and the outcome event in one transaction. While it parses, the rows read so far
go to ``rows_read`` every few seconds on a connection of their own (progress.py).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.db.models.functions import Now
from django.utils import timezone

from core import metrics
from core.claims import PERMANENT_ERRORS, ClaimedWork, SweepResult
from core.exceptions import ClaimLost
from core.faults import crash_point
from core.texts import Text, as_json, gettext_noop, stored, stored_all, text_of
from mailboxes.exceptions import MessageRefused
from mailboxes.models import InboundMessage
from pricefeed import catalogue, columns, parsing
from pricefeed.limits import parse_limits
from pricefeed.matching import Attachment
from pricefeed.models import PriceImport, PriceListConfig

from .diff import diff
from .outcome import publish_outcome
from .progress import Progress, import_progress
from .source import import_file
from .storage import insert_items, item_writer

logger = logging.getLogger(__name__)

Status = PriceImport.Status
IMPORT_TASK = "pricefeed.tasks.run_import"


# A file up to this size is imported by the task that read its message, at once: for a
# small file the queue's round trip (an enqueue, a pusher, a worker, ~10 ms of CPU in
# all) costs about as much as its import.
INLINE_IMPORT_BYTES = 2**20


def enqueue_imports(import_ids: Iterable[int]) -> None:
    from django_q.tasks import async_task

    for import_id in import_ids:
        async_task(IMPORT_TASK, import_id, task_name=f"run_import {import_id}")


def imports_start(pending: list[tuple[int, int]], *, worker: str) -> None:
    """Starts the new imports of a message, ``pending`` as price_imports_create returns
    them: larger files (and files from archives, whose size is known only once unpacked:
    0) go to the queue, where workers import them side by side; then the small ones are
    imported here, in this task."""
    queued: list[int] = []
    small: list[int] = []
    for pk, size in pending:
        (small if 0 < size <= INLINE_IMPORT_BYTES else queued).append(pk)
    enqueue_imports(queued)
    for import_id in small:
        price_import_run(import_id=import_id, worker=worker)


def price_imports_create(
    *, message_id: int, items: list[tuple[int, Attachment, str]]
) -> list[tuple[int, int]]:
    """Creates one PENDING PriceImport per (config, file); existing ones are kept.

    ``items`` are (config id, attachment, file key). Called inside the transaction that
    finishes the message, so a message is DONE exactly when its imports exist. Returns
    the (id, size) of the imports that are still PENDING (new or not yet run); the size
    of a file from an archive is 0.
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
            "pk", "size"
        )
    )


def options_for(config: PriceListConfig) -> parsing.ParseOptions:
    return parsing.ParseOptions(
        **columns.option_values(dict(config.columns or {})),
        # Plain strings, not the model's choices: the preview pickles the options to a
        # child process that loads no Django (core.capped).
        sheet=str(config.sheet),
        number_format=str(config.number_format),
        default_currency=str(config.default_currency),
        allow_nonpositive=config.allow_nonpositive_prices,
    )


def price_import_run(*, import_id: int, worker: str) -> str | None:
    """Reads, parses and stores one price-list file; idempotent (only PENDING runs).

    Returns the final status, or None when there was nothing to do (ClaimedWork.run: a
    permanent error, such as a value the database refuses, fails the import at once; an
    unexpected one retries or fails it; a worker that dies under it counts a crash).
    """

    def work() -> str:
        crash_point("import_running")
        price_import = (
            PriceImport.objects.select_related("config", "message")
            .defer("message__raw")
            .get(pk=import_id)
        )
        fingerprint: dict = {}
        with import_progress(import_id=import_id, worker=worker) as progress:
            try:
                data, digest = import_file(price_import)
                fingerprint = {"size": len(data), "sha256": digest}
                return _parse_and_store(price_import, worker, data, fingerprint, progress)
            except parsing.ParseError as exc:
                # The rows read before the parse stopped (a time limit, a broken row
                # far down the file): none is kept, but the count says how far it got.
                _store_failure(
                    price_import, worker, text_of(exc), fingerprint, rows_read=progress.rows
                )
                return Status.FAILED

    # rows_read starts again from 0 on every run (a retried or requeued import).
    return IMPORT_WORK.run(pk=import_id, worker=worker, work=work, started_at=Now(), rows_read=0)


class _Discard(Exception):
    """The parsed rows are not to be kept (the import fails as a whole)."""

    def __init__(self, parsed: parsing.ParsedFile) -> None:
        super().__init__()
        self.parsed = parsed


def _parse_and_store(
    price_import: PriceImport,
    worker: str,
    data: bytes,
    fingerprint: dict,
    progress: Progress | None = None,
) -> str:
    """Parses the file straight into the items table and stores the outcome, all in one
    transaction.

    Rows go to PostgreSQL (COPY) in chunks while the file is read, so the server stores
    one chunk while Python parses the next (the machines have two cores). A ParseError,
    a verdict of FAILED or a lost claim rolls the rows back; a FAILED verdict is then
    stored, without rows, by _store(). ``progress`` counts the rows as they are read
    (and writes the count every few seconds, outside this transaction).
    """
    options = options_for(price_import.config)
    limits = message_limits(price_import)
    # The guard runs before the transaction: what the file spans is charged to its
    # message, in a short transaction of its own, before the reader opens it.
    checked = parsing.check_file(data, limits)
    charge_cells(price_import, worker, checked.cells)
    try:
        with transaction.atomic(durable=True):
            # A config's first list is made current as it is stored (pricefeed.catalogue).
            first_list = catalogue.first_list_start(price_import.config_id)
            with (
                metrics.IMPORT_PARSE.time(),
                item_writer(
                    price_import.pk,
                    price_import.config_id,
                    progress.read if progress is not None else None,
                    current_from=first_list,
                ) as writer,
            ):
                parsed = parsing.parse(data, options, limits, sink=writer, checked=checked)
            status, reason = verdict(price_import.config, parsed)
            if status == Status.FAILED:
                raise _Discard(parsed)
            rows = catalogue.StoredRows(
                repeated_skus=writer.repeated_skus,
                rows_digest=writer.digest,
                # The same rows read in another mode do not make the same catalogue.
                catalogue_digest=f"{price_import.config.mode}:{writer.catalogue_digest}",
            )
            outcome = _Outcome(parsed, status, reason, fingerprint, rows, first_list)
            _finish(price_import, worker, outcome, again=writer.current_again)
    except _Discard as discard:
        return _store(price_import, worker, discard.parsed, fingerprint)
    _log_finished(price_import, status, parsed)
    return status


MESSAGE_TIME_SPENT = gettext_noop(
    "the other files of this message took %(seconds)s s to read, the time one message "
    "may take (PRICEFEED_MESSAGE_PARSE_SECONDS): this file was not read"
)


def message_limits(price_import: PriceImport) -> parsing.Limits:
    """parse_limits() for one file of a message: its reading time (``max_seconds``) cut
    to what the message has left of PRICEFEED_MESSAGE_PARSE_SECONDS, once the time its
    other imports ran (started to finished, database time) is charged. A message of a
    hundred files cannot cost a hundred times one file's limit (issue 30). Raises
    ParseTimeLimit when nothing is left."""
    limits = parse_limits()
    budget = settings.PRICEFEED_MESSAGE_PARSE_SECONDS
    used = (
        PriceImport.objects.filter(
            message_id=price_import.message_id,
            started_at__isnull=False,
            finished_at__isnull=False,
        )
        .exclude(pk=price_import.pk)
        .aggregate(spent=Sum(F("finished_at") - F("started_at")))["spent"]
    )
    spent = used.total_seconds() if used else 0.0
    left = math.floor(budget - spent)
    if left < 1:
        raise parsing.ParseTimeLimit(Text(MESSAGE_TIME_SPENT, seconds=math.ceil(spent)))
    return dataclasses.replace(limits, max_seconds=min(limits.max_seconds, left))


MESSAGE_CELLS_SPENT = gettext_noop(
    "this file spans %(cells)s cells and the other files of this message %(spent)s, more "
    "than one message may span (PRICEFEED_MESSAGE_PARSE_CELLS, %(limit)s): this file was "
    "not read"
)


def charge_cells(price_import: PriceImport, worker: str, cells: int) -> None:
    """Charges the cells a file's workbook spans (its guard's measure, parsing.check_file)
    to its message's PRICEFEED_MESSAGE_PARSE_CELLS, before the reader opens it: the
    files of one message together cannot make the reader hold more (issue 30), however
    many there are. A file that does not fit in what the message has left raises
    WorkbookRefused, charged nothing: its import ends FAILED unread, with the reason.

    What a message has spent is the sum of its imports' ``cells_charged``; each run
    sets its own import's charge (0 first, then ``cells`` when they fit), so a retried or
    requeued import replaces its charge instead of adding to it. The sum is read and the
    charge written under the message's row lock, in a transaction of its own: imports of
    one message charged at once by different workers take turns, and each sees what the
    one before committed (READ COMMITTED), so two cannot both take the last cells. The
    import's own row is written first, then the message is locked: the order in which a
    finishing import takes them (outcome.publish_outcome). A text table (0 cells) is
    charged nothing and costs no transaction. Raises ClaimLost when the import is no
    longer this worker's."""
    if not cells:
        return
    budget = settings.PRICEFEED_MESSAGE_PARSE_CELLS
    with transaction.atomic(durable=True):
        ours = PriceImport.objects.filter(
            pk=price_import.pk, status=Status.RUNNING, claimed_by=worker
        ).update(cells_charged=0)
        if not ours:
            raise ClaimLost(f"price import {price_import.pk} is no longer claimed by {worker}")
        InboundMessage.objects.select_for_update().values_list("pk", flat=True).get(
            pk=price_import.message_id
        )
        spent = (
            (
                PriceImport.objects.filter(message_id=price_import.message_id)
                .exclude(pk=price_import.pk)
                .aggregate(spent=Sum("cells_charged"))["spent"]
            )
            or 0
        )
        fits = spent + cells <= budget
        if fits:
            PriceImport.objects.filter(pk=price_import.pk).update(cells_charged=cells)
    if not fits:
        raise parsing.WorkbookRefused(
            Text(MESSAGE_CELLS_SPENT, cells=cells, spent=spent, limit=budget)
        )


# Why an import FAILED, stored in English as its last error and translated where it is
# shown (pricefeed.texts).
NO_VALID_ROWS = gettext_noop("no valid price rows")
# A count: translated with ngettext (pricefeed.texts).
NO_VALID_ROWS_FAILED = "no valid price rows (%(failed)s row(s) failed)"
TOO_MANY_FAILED = gettext_noop("%(failed)s of %(total)s rows failed, over the limit of %(limit)s%%")


def verdict(config: PriceListConfig, parsed: parsing.ParsedFile) -> tuple[str, str]:
    """(status, reason) an import of ``config`` ends in with these rows."""
    # rows_failed counts every failed row; parsed.errors keeps at most max_errors.
    ok, failed = parsed.rows_ok, parsed.rows_failed
    if not ok:
        if failed:
            return Status.FAILED, Text(NO_VALID_ROWS_FAILED, failed=failed)
        return Status.FAILED, NO_VALID_ROWS
    if parsed.rows_total and failed * 100 > config.max_bad_rows_percent * parsed.rows_total:
        return Status.FAILED, Text(
            TOO_MANY_FAILED,
            failed=failed,
            total=parsed.rows_total,
            limit=config.max_bad_rows_percent,
        )
    return (Status.PARTIAL if failed else Status.SUCCEEDED), ""


def _store_failure(
    price_import: PriceImport, worker: str, reason: str, fingerprint: dict, *, rows_read: int = 0
) -> None:
    with transaction.atomic(durable=True):
        IMPORT_WORK.finish(
            pk=price_import.pk,
            worker=worker,
            status=Status.FAILED,
            **stored("last_error", reason),
            rows_read=rows_read,
            **fingerprint,
        )
        publish_outcome(price_import.pk)
    logger.warning(
        "import failed import_id=%s: %s",
        price_import.pk,
        reason,
        extra={"action": "import_failed", "import_id": price_import.pk},
    )
    _count_finished(price_import, Status.FAILED, rows_stored=0)


def _store(
    price_import: PriceImport, worker: str, parsed: parsing.ParsedFile, fingerprint: dict
) -> str:
    """Stores an outcome whose rows are in ``parsed.rows`` (or that keeps none)."""
    status, reason = verdict(price_import.config, parsed)
    with transaction.atomic(durable=True):
        if status != Status.FAILED and parsed.rows:
            insert_items(price_import.pk, parsed.rows, price_import.config_id, parsed.extras)
        _finish(price_import, worker, _Outcome(parsed, status, reason, fingerprint))
    _log_finished(price_import, status, parsed)
    return status


@dataclass(frozen=True)
class _Outcome:
    """What an import ends in: its parsed file, status and reason (verdict), the file's
    fingerprint, what storing its rows found out, and the moment they were stored current
    from when they were a config's first list (catalogue.first_list_start)."""

    parsed: parsing.ParsedFile
    status: str
    reason: str
    fingerprint: dict
    rows: catalogue.StoredRows = field(default_factory=catalogue.StoredRows)
    first_list: datetime | None = None


def _finish(
    price_import: PriceImport, worker: str, outcome: _Outcome, *, again: Collection[str] = ()
) -> None:
    """Diff, counts, status and the outbox event; inside the caller's transaction, after
    the rows are stored. ``again``: the SKUs a first list listed more than once."""
    parsed, status = outcome.parsed, outcome.status
    info = _parse_info(outcome)
    changes: dict = {}
    review: dict = {}
    if status != Status.FAILED:
        decision = _decide(price_import, outcome)
        info["unreadable_skus"] = decision.unreadable
        changes = diff(decision, parsed.rows_ok)
        held = decision.held(
            rows_ok=parsed.rows_ok,
            removed=changes.get("removed", 0),
            types_went={
                code: entry["went"]
                for code, entry in changes.get("price_types", {}).items()
                if entry.get("went")
            },
        )
        if held:
            review = {"review": PriceImport.Review.HELD, **stored("review_reason", held)}
        elif decision.first_list:
            catalogue.first_list_done(price_import, at=decision.at, again=sorted(again))
        else:
            catalogue.catalogue_apply(decision)
    IMPORT_WORK.finish(
        pk=price_import.pk,
        worker=worker,
        status=status,
        **review,
        format=parsed.format,
        rows_total=parsed.rows_total,
        rows_ok=parsed.rows_ok if status != Status.FAILED else 0,
        rows_failed=parsed.rows_failed,
        rows_skipped=parsed.skipped_rows,
        rows_read=parsed.rows_total,
        errors=[{"row": row, "error": as_json(text)} for row, text in parsed.errors[:1000]],
        diff=changes,
        parse_info=info,
        **stored("last_error", outcome.reason),
        **outcome.fingerprint,
    )
    publish_outcome(price_import.pk)


def _decide(price_import: PriceImport, outcome: _Outcome) -> catalogue.Acceptance:
    """The acceptance decision, with the config locked: a first list was locked and
    stored current already (into an empty catalogue everything is added); any other
    list takes the config's lock now, so that one import at a time compares with and
    changes the catalogue."""
    if outcome.first_list is not None:
        return catalogue.acceptance(
            price_import, at=outcome.first_list, rows=outcome.rows, unreadable=[], first_list=True
        )
    at = catalogue.config_lock(price_import.config_id)
    partial = outcome.status == Status.PARTIAL
    unreadable = _unreadable_skus(outcome.parsed) if partial else []
    return catalogue.acceptance(price_import, at=at, rows=outcome.rows, unreadable=unreadable)


def _parse_info(outcome: _Outcome) -> dict:
    """How the file was read, kept with the import (its page shows it; the next import's
    diff reads ``repeated_skus`` and the digests)."""
    parsed = outcome.parsed
    return {
        "sheet": parsed.sheet,
        "encoding": parsed.encoding,
        "delimiter": parsed.delimiter,
        "header_row": parsed.header_row,
        "columns": parsed.columns,
        "errors_total": parsed.rows_failed,
        # Of rows_skipped: group and section headings ("1.1. Дрели"), totals ("Итого"),
        # read as no item and no error.
        "skipped_headings": parsed.skipped_headings,
        "skipped_totals": parsed.skipped_totals,
        # What was read only in part (cells past PRICEFEED_PARSE_MAX_COLUMNS, lines above
        # the header that were not read).
        "warnings": stored_all(parsed.warnings),
        # Rows stored with something to say (an invalid barcode, kept apart), the first
        # thousand, and how many there were.
        "row_warnings": [
            {"row": row, "warning": as_json(text)} for row, text in parsed.row_warnings[:1000]
        ],
        "row_warnings_total": parsed.rows_warned,
        # The diff of the next import reads this import's rows as they are when False.
        "repeated_skus": outcome.rows.repeated_skus,
        # Equal digests: the same SKUs and prices as this import's, and no diff.
        "rows_digest": outcome.rows.rows_digest,
        # Equal digests of a SUCCEEDED snapshot: the catalogue is already this list.
        "catalogue_digest": outcome.rows.catalogue_digest,
    }


def _unreadable_skus(parsed: parsing.ParsedFile) -> list[str] | None:
    """The SKUs of a PARTIAL import's unreadable rows (they keep their value in the
    catalogue); None when more rows failed than were kept (nothing is then removed)."""
    skus = getattr(parsed, "failed_skus", None)
    if skus is None or parsed.rows_failed > len(parsed.errors):
        return None
    return sorted(set(skus))[: catalogue.UNREADABLE_SKUS_KEPT] if skus else []


def _log_finished(price_import: PriceImport, status: str, parsed: parsing.ParsedFile) -> None:
    _count_finished(
        price_import, status, rows_stored=parsed.rows_ok if status != Status.FAILED else 0
    )
    logger.info(
        "import finished import_id=%s status=%s rows=%s failed=%s",
        price_import.pk,
        status,
        parsed.rows_ok,
        parsed.rows_failed,
        extra={"action": "import_finished", "import_id": price_import.pk},
    )


def _count_finished(price_import: PriceImport, status: str, *, rows_stored: int) -> None:
    """The event metrics of a finished import (core.metrics), after its commit. The
    end-to-end time runs from the message's received_at (database time, written by
    listen_mail) to now on this worker's clock: hosts are assumed NTP-synchronised."""
    metrics.IMPORTS_FINISHED.labels(status=status).inc()
    metrics.IMPORT_ROWS_STORED.inc(rows_stored)
    waited = (timezone.now() - price_import.message.received_at).total_seconds()
    metrics.IMPORT_END_TO_END.observe(max(0.0, waited))


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
    id_key="import_id",
    crashes_field="crashes",
    # An import reads the same bytes on every run: a worker that died reading them (a
    # reader's native abort, exit 134, or its kill at the memory cap or the task timeout)
    # would die again. So the first crash ends it FAILED, with the reason (issue 30).
    max_crashes=1,
    # A message refused by the MIME budget when its file is read again (the budget was
    # lowered since it was matched) is refused on every attempt.
    permanent=(*PERMANENT_ERRORS, MessageRefused),
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
    return IMPORT_WORK.requeue(
        pks=import_ids, from_states=[Status.FAILED], enqueue=lambda ids: enqueue_imports(ids)
    )
