"""Intake: what a recorded message means for the price lists of its mailbox.

A worker claims the message (mailboxes.processing), reads its MIME structure, lists the
files inside archive attachments, judges the sender from the receiving server's
Authentication-Results (mailboxes.authresults), evaluates every enabled config of the
mailbox (matching) and, in one transaction, finishes the message DONE (a config
matched) or IGNORED with its match report, and creates one PENDING import per matched
file. A message whose MIME structure is broken is REJECTED with the defects found.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction

from core.budget import cpu_budget
from core.texts import Text, as_json, gettext_noop, stored, stored_all, text_of
from mailboxes import authresults, mime
from mailboxes.exceptions import MessageRefused
from mailboxes.mimebudget import mime_budget
from mailboxes.models import InboundMessage
from mailboxes.processing import message_finish, message_run
from mailboxes.selectors import message_raw

from . import matching, parsing
from .imports.lifecycle import imports_start, price_imports_create
from .imports.source import ARCHIVES
from .limits import parse_limits
from .models import PriceListConfig

logger = logging.getLogger(__name__)

# The match report's note, translated where it is shown (pricefeed.texts).
NO_ENABLED_CONFIGS = gettext_noop("the mailbox has no enabled configs")
# A message's reasons (InboundMessage.last_error and the report), stored in English.
TOO_MANY_FILES = gettext_noop(
    "the message holds more than %(limit)s files, attachments and archive members together "
    "(PRICEFEED_MAX_FILES_PER_MESSAGE)"
)
OVER_CPU_TIME = gettext_noop(
    "reading the message took more than %(seconds)s s of CPU time (PRICEFEED_MIME_MAX_CPU_SECONDS)"
)
OUT_OF_MEMORY = gettext_noop(
    "reading the message ran out of memory (PRICEFEED_WORKER_MEMORY_LIMIT)"
)
REFUSED = gettext_noop("refused: %(reason)s")
MALFORMED_MIME = gettext_noop("malformed MIME: %(defects)s")

Status = InboundMessage.Status


def attachments_inspect(
    parts: Sequence[mime.AttachmentPart],
    payloads: dict[str, bytes],
    *,
    max_files: int | None = None,
) -> list[matching.Attachment]:
    """The attachments as matching sees them, with the files inside archive attachments
    (zip, gzip, tar; nested) listed under the input limits, and the macOS metadata left
    out of them (``skipped``); an archive that is refused carries the reason instead.

    Raises MessageRefused as soon as the message holds more than ``max_files`` files
    (attachments and archive members; default PRICEFEED_MAX_FILES_PER_MESSAGE), without
    expanding the rest: one mail must not become thousands of imports."""
    if max_files is None:
        max_files = settings.PRICEFEED_MAX_FILES_PER_MESSAGE
    limits = parse_limits()
    inspected = []
    files = 0
    for part in parts:
        attachment = matching.Attachment(**dataclasses.asdict(part))
        payload = payloads.get(part.key, b"")
        if parsing.detect_format(payload) in ARCHIVES:
            skipped: list[str] = []  # macOS metadata (__MACOSX/, ._name): not imported
            try:
                members = parsing.expand(
                    payload,
                    part.filename,
                    limits,
                    max_files=max(max_files - files, 0),
                    skipped=skipped,
                )
            except parsing.TooManyFiles:
                raise MessageRefused(_too_many_files(max_files)) from None
            except parsing.ParseError as exc:
                attachment = dataclasses.replace(attachment, archive_error=text_of(exc))
            else:
                files += len(members)
                attachment = dataclasses.replace(
                    attachment, members=tuple(m.path for m in members), skipped=tuple(skipped)
                )
        else:
            files += 1
        if files > max_files:
            raise MessageRefused(_too_many_files(max_files))
        inspected.append(attachment)
    return inspected


def _too_many_files(limit: int) -> str:
    return Text(TOO_MANY_FILES, limit=limit)


def message_process(*, message_id: int, worker: str) -> str | None:
    """Claims a message, matches it against its mailbox's configs and records the outcome;
    then starts its imports (``lifecycle.imports_start``: small files are imported here).

    Idempotent: a message that is not RECEIVED/RETRYABLE (or not yet due) is left alone.
    Returns the final status, or None when there was nothing to do.
    """
    started: list[tuple[int, int]] = []
    status = message_run(
        message_id=message_id, worker=worker, work=lambda: _process(message_id, worker, started)
    )
    # Once the message is finished: its imports are rows of their own, run and retried
    # on their own.
    imports_start(started, worker=worker)
    return status


def _reject(*, message_id: int, worker: str, reason: str, report: dict) -> str:
    message_finish(
        message_id=message_id,
        worker=worker,
        status=Status.REJECTED,
        **stored("last_error", reason),
        match_report=report,
    )
    logger.warning(
        "message rejected message_id=%s: %s",
        message_id,
        reason,
        extra={"action": "message_rejected", "message_id": message_id},
    )
    return Status.REJECTED


def _read(raw: bytes) -> tuple[mime.ParsedMessage, list[matching.Attachment]]:
    """The message's MIME structure and its files, under the MIME budget (structure
    counts first, then CPU time) and the files-per-message cap; raises MessageRefused."""
    budget = mime_budget()

    def over_time() -> MessageRefused:
        return MessageRefused(Text(OVER_CPU_TIME, seconds=f"{budget.max_cpu_seconds:g}"))

    try:
        with cpu_budget(budget.max_cpu_seconds, over_time):
            parsed = mime.parse_message(raw, budget)
            if parsed.structural_defects:
                return parsed, []
            return parsed, attachments_inspect(parsed.attachments, parsed.payloads)
    except MemoryError:
        raise MessageRefused(OUT_OF_MEMORY) from None


def _process(message_id: int, worker: str, started: list[tuple[int, int]]) -> str:
    """Reads the message and finishes it; its pending imports (id, size) go to
    ``started``."""
    mailbox_id = InboundMessage.objects.values_list("mailbox_id", flat=True).get(pk=message_id)
    raw = message_raw(message_id)
    try:
        parsed, attachments = _read(raw)
    except MessageRefused as exc:
        return _reject(
            message_id=message_id,
            worker=worker,
            reason=Text(REFUSED, reason=text_of(exc)),
            report={"refused": as_json(text_of(exc))},
        )
    if parsed.structural_defects:
        return _reject(
            message_id=message_id,
            worker=worker,
            reason=Text(MALFORMED_MIME, defects="; ".join(sorted(set(parsed.structural_defects)))),
            report={
                "defects": stored_all(parsed.structural_defects),
                "warnings": stored_all(parsed.warnings),
            },
        )
    # Judged at every processing, with the authserv-ids configured now: a message
    # reprocessed after PRICEFEED_AUTHSERV_IDS changed is judged anew.
    sender_auth = authresults.sender_verdict(
        raw,
        from_address=parsed.headers.from_address,
        authserv_ids=settings.PRICEFEED_AUTHSERV_IDS,
    )
    del raw  # what matching needs of the body is in parsed.payloads
    configs = list(
        PriceListConfig.objects.filter(mailbox_id=mailbox_id, enabled=True).order_by("pk")
    )
    envelope = matching.Envelope(
        sender=parsed.headers.from_address,
        subject=parsed.headers.subject,
        attachments=tuple(attachments),
        sender_auth=sender_auth,
    )
    rules = [
        matching.Rule(
            c.pk,
            c.name,
            c.sender_pattern,
            c.subject_pattern,
            c.filename_pattern,
            sender_auth=c.sender_auth,
        )
        for c in configs
    ]
    results = matching.evaluate_all(rules, envelope)
    report = matching.report(envelope, results, warnings=stored_all(parsed.warnings))
    if not configs:
        report["note"] = as_json(NO_ENABLED_CONFIGS)
    matched = [(r.config_id, key) for r in results if r.matched for key in r.attachments]
    by_key = {a.key: a for a in attachments}
    status = Status.DONE if matched else Status.IGNORED
    with transaction.atomic(durable=True):
        message_finish(message_id=message_id, worker=worker, status=status, match_report=report)
        pending = price_imports_create(
            message_id=message_id,
            items=[(config_id, by_key[key.split("/", 1)[0]], key) for config_id, key in matched],
        )
    logger.info(
        "message processed message_id=%s status=%s imports=%s",
        message_id,
        status,
        len(matched),
        extra={"action": "message_processed", "message_id": message_id},
    )
    started.extend(pending)
    return status
