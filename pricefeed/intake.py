"""Intake: what a recorded message means for the price lists of its mailbox.

A worker claims the message (mailboxes.processing), reads its MIME structure, lists the
files inside archive attachments, evaluates every enabled config of the mailbox
(matching) and, in one transaction, finishes the message DONE (a config matched) or
IGNORED with its match report, and creates one PENDING import per matched file. A
message whose MIME structure is broken is REJECTED with the defects found.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from django.db import transaction

from mailboxes import mime
from mailboxes.models import InboundMessage
from mailboxes.processing import message_finish, message_run
from mailboxes.selectors import message_raw

from . import matching, parsing
from .imports.lifecycle import enqueue_imports, price_imports_create
from .imports.source import ARCHIVES
from .limits import parse_limits
from .models import PriceListConfig

logger = logging.getLogger(__name__)

Status = InboundMessage.Status


def attachments_inspect(
    parts: Sequence[mime.AttachmentPart], payloads: dict[str, bytes]
) -> list[matching.Attachment]:
    """The attachments as matching sees them, with the files inside archive attachments
    (zip, gzip; nested) listed under the input limits; an archive that is refused
    carries the reason instead."""
    limits = parse_limits()
    inspected = []
    for part in parts:
        attachment = matching.Attachment(**dataclasses.asdict(part))
        payload = payloads.get(part.key, b"")
        if parsing.detect_format(payload) in ARCHIVES:
            try:
                members = parsing.expand(payload, part.filename, limits)
            except parsing.ParseError as exc:
                attachment = dataclasses.replace(attachment, archive_error=str(exc))
            else:
                attachment = dataclasses.replace(attachment, members=tuple(m.path for m in members))
        inspected.append(attachment)
    return inspected


def message_process(*, message_id: int, worker: str) -> str | None:
    """Claims a message, matches it against its mailbox's configs and records the outcome.

    Idempotent: a message that is not RECEIVED/RETRYABLE (or not yet due) is left alone.
    Returns the final status, or None when there was nothing to do.
    """
    return message_run(
        message_id=message_id, worker=worker, work=lambda: _process(message_id, worker)
    )


def _process(message_id: int, worker: str) -> str:
    mailbox_id = InboundMessage.objects.values_list("mailbox_id", flat=True).get(pk=message_id)
    parsed = mime.parse_message(message_raw(message_id))
    if parsed.structural_defects:
        reason = "malformed MIME: " + "; ".join(sorted(set(parsed.structural_defects)))
        message_finish(
            message_id=message_id,
            worker=worker,
            status=Status.REJECTED,
            last_error=reason,
            match_report={"defects": parsed.structural_defects, "warnings": parsed.warnings},
        )
        logger.warning(
            "message rejected message_id=%s: %s",
            message_id,
            reason,
            extra={"action": "message_rejected", "message_id": message_id},
        )
        return Status.REJECTED
    configs = list(
        PriceListConfig.objects.filter(mailbox_id=mailbox_id, enabled=True).order_by("pk")
    )
    attachments = attachments_inspect(parsed.attachments, parsed.payloads)
    envelope = matching.Envelope(
        sender=parsed.headers.from_address,
        subject=parsed.headers.subject,
        attachments=tuple(attachments),
    )
    rules = [
        matching.Rule(c.pk, c.name, c.sender_pattern, c.subject_pattern, c.filename_pattern)
        for c in configs
    ]
    results = matching.evaluate_all(rules, envelope)
    report = matching.report(envelope, results, warnings=parsed.warnings)
    if not configs:
        report["note"] = "the mailbox has no enabled configs"
    matched = [(r.config_id, key) for r in results if r.matched for key in r.attachments]
    by_key = {a.key: a for a in attachments}
    status = Status.DONE if matched else Status.IGNORED
    with transaction.atomic(durable=True):
        message_finish(message_id=message_id, worker=worker, status=status, match_report=report)
        pending = price_imports_create(
            message_id=message_id,
            items=[(config_id, by_key[key.split("/", 1)[0]], key) for config_id, key in matched],
        )
        transaction.on_commit(lambda: enqueue_imports(pending))
    logger.info(
        "message processed message_id=%s status=%s imports=%s",
        message_id,
        status,
        len(matched),
        extra={"action": "message_processed", "message_id": message_id},
    )
    return status
