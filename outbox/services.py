"""The transactional outbox: publishing events, claiming them, recording their results.

OutboxEvent: NEW → PROCESSING → SENT | FAILED; a failed attempt goes back to NEW with a
later ``next_attempt_at``. Claims use ``FOR UPDATE SKIP LOCKED`` so any number of
dispatchers work side by side; results are recorded by conditional UPDATEs on the claim.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    models,
    transaction,
)
from django.db.backends.utils import CursorWrapper
from django.db.models import signals
from django.db.models.base import ModelState
from django.db.models.functions import Now
from psycopg.types.json import Jsonb

from core.claims import ClaimedWork
from core.retry import outbox_retry_policy
from core.texts import Text, gettext_noop, stored

from . import sql
from .exceptions import NotInTransaction
from .models import OutboxEvent, time_ordered_uuid

logger = logging.getLogger(__name__)

# An event's reasons, stored in English and shown translated (core.texts).
NO_HANDLER = gettext_noop("no handler for %(kind)s")

Status = OutboxEvent.Status
CHANNEL = "pricefeed_outbox"

EVENT_WORK = ClaimedWork(
    model=OutboxEvent,
    running=Status.PROCESSING,
    retry=Status.NEW,
    failed=Status.FAILED,
    waiting=(Status.NEW,),
    queued_field=None,  # dispatchers claim NEW rows themselves
    what="outbox event",
    describe=lambda pk: OutboxEvent.objects.values_list("kind", flat=True).get(pk=pk),
    policy=outbox_retry_policy,
    id_key="event_id",
)


def publish(
    kind: str, aggregate: models.Model, payload: dict, *, using: str = DEFAULT_DB_ALIAS
) -> OutboxEvent:
    """Records an event in the caller's transaction: it exists exactly when the change
    it announces was committed, and vanishes with a rollback.

    Raises NotInTransaction outside ``transaction.atomic()``: an event written in its own
    transaction could outlive a change that rolls back, or be lost after one that commits.
    """
    if not connections[using].in_atomic_block:
        raise NotInTransaction(
            f"publish({kind!r}) must be called inside the transaction that makes the change"
        )
    event = OutboxEvent.objects.using(using).create(
        kind=kind,
        aggregate_type=aggregate._meta.label_lower,
        aggregate_id=str(aggregate.pk),
        payload=payload,
    )
    _wake_on_commit(using)
    logger.debug(
        "event published kind=%s aggregate=%s:%s event_id=%s",
        kind,
        event.aggregate_type,
        event.aggregate_id,
        event.id,
        extra={"action": "event_published", "event_id": str(event.id)},
    )
    return event


def publish_many(
    kind: str,
    events: Sequence[tuple[models.Model, dict, uuid.UUID]],
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> int:
    """``publish`` for many events of one kind, each (aggregate, payload, id), in one
    INSERT: for a fan-out that publishes one event per row it made (the ids chosen by
    the caller, ``time_ordered_uuid()``, so that it can record them on its rows in the
    same statement that makes them). Raises NotInTransaction as ``publish`` does."""
    if not connections[using].in_atomic_block:
        raise NotInTransaction(
            f"publish_many({kind!r}) must be called inside the transaction that makes the change"
        )
    if not events:
        return 0
    # One statement, its rows as arrays bound on the server: Django's bulk_create
    # compiled each of 500 rows' 13 fields in Python (~0.1 s a batch of a fan-out).
    with _pg_cursor() as cursor:
        cursor.execute(
            sql.PUBLISH_MANY,
            [
                kind,
                _uuid_array(event_id for _a, _p, event_id in events),
                [aggregate._meta.label_lower for aggregate, _p, _i in events],
                [str(aggregate.pk) for aggregate, _p, _i in events],
                [Jsonb(payload) for _a, payload, _i in events],
            ],
        )
    _wake_on_commit(using)
    logger.debug(
        "events published kind=%s count=%s",
        kind,
        len(events),
        extra={"action": "events_published"},
    )
    return len(events)


def publish_select(
    kind: str,
    aggregate: models.Model,
    query: str,
    params: dict[str, Any],
    *,
    most: int,
    using: str = DEFAULT_DB_ALIAS,
) -> int:
    """``publish`` of an event per row of ``query``, in one INSERT … SELECT: for events
    whose payloads the database builds from what it holds (a refresh's changes, ~200
    events of 500 products each), never brought to Python and back. ``query`` gives two
    columns, the row's number counted from 0 and its payload as jsonb, at most ``most``
    rows (more: nothing is published, and the statement fails); its named parameters
    are in ``params``. Returns how many were published. Raises NotInTransaction as
    ``publish`` does."""
    if not connections[using].in_atomic_block:
        raise NotInTransaction(
            f"publish_select({kind!r}) must be called inside the transaction that makes the change"
        )
    ids = _uuid_array(time_ordered_uuid() for _ in range(most))
    with connections[using].cursor() as cursor:
        cursor.execute(
            sql.PUBLISH_SELECT.replace("SELECT_ROWS", query),
            {
                **params,
                "outbox_ids": ids,
                "outbox_kind": kind,
                "outbox_type": aggregate._meta.label_lower,
                "outbox_aggregate": str(aggregate.pk),
            },
        )
        published = cursor.rowcount
    if published:
        _wake_on_commit(using)
    logger.debug(
        "events published kind=%s count=%s",
        kind,
        published,
        extra={"action": "events_published"},
    )
    return published


def _wake_dispatchers() -> None:
    """Tells idle dispatchers there is work (PostgreSQL NOTIFY)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.WAKE, [CHANNEL])


def _wake_on_commit(using: str) -> None:
    """The dispatchers woken once when the caller's transaction commits, however many
    events it publishes (a NOTIFY per event was a statement per event after the commit:
    1,000 of them for a transaction of 1,000). A wake-up registered in a savepoint rolled
    back since is gone from the list, and registered again here."""
    hooks = connections[using].run_on_commit
    # (savepoints, function, robust): django-stubs know the first two
    if not any(hook[1] is _wake_dispatchers for hook in hooks):
        transaction.on_commit(_wake_dispatchers, using=using)


def new_claim_id(dispatcher: str) -> str:
    """A name for one claim: results are recorded only by the task holding this very
    claim, never by a stale task re-delivered after the claim expired and was renewed."""
    return f"{dispatcher}/{uuid.uuid4().hex[:12]}"


@contextmanager
def _pg_cursor(*, health_check: bool = True) -> Iterator[CursorWrapper]:
    """A cursor on Django's PostgreSQL connection that binds parameters on the server.

    Django's own cursors quote every parameter into the SQL text on the client; for the
    hot statements of the dispatch path (a uuid[] of a whole batch) that quoting cost
    more than the statement. The cursor is still Django's wrapper: execute wrappers,
    the query log and error translation apply as usual. ``health_check=False``: see
    ``_read``.
    """
    from django.db.backends.postgresql.base import ServerBindingCursor

    # What connection.cursor() does before it makes its own cursor.
    if health_check:
        connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw: Any = ServerBindingCursor(connection.connection)  # type: ignore[call-arg]
    wrapped = (
        connection.make_debug_cursor(raw)
        if connection.queries_logged
        else connection.make_cursor(raw)
    )
    with wrapped as cursor:
        yield cursor


def _read(statement: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """Runs a read of the dispatch path, and on a connection found broken runs it once
    more on a new one. django-q2 resets Django's connection health check before every
    task, so the task's first statement cost a ``SELECT 1`` round trip first (one of
    three per batch); a read can simply be tried again instead, which costs nothing
    while the connection is sound. Inside a transaction it is not tried again."""
    for attempt in (1, 2):
        try:
            with _pg_cursor(health_check=False) as cursor:
                cursor.execute(statement, params)
                rows = cursor.fetchall()
            connection.health_check_done = True  # type: ignore[attr-defined]  # it answered
            return rows
        except (OperationalError, InterfaceError):
            if attempt == 2 or connection.in_atomic_block:
                raise
            logger.info("database connection lost; reading again on a new one")
            connection.close()
    raise AssertionError("unreachable")


def events_claim(*, dispatcher: str, limit: int) -> list[uuid.UUID]:
    """Claims up to ``limit`` due NEW events, oldest due first, skipping rows another
    dispatcher has locked; they are PROCESSING with ``claimed_by=dispatcher`` (pass a
    ``new_claim_id()``) when this returns."""
    # One statement: the partial index finds the due NEW rows, SKIP LOCKED steps over
    # other dispatchers' claims, and the rows are marked in the same pass. One statement
    # is atomic on its own: outside a transaction it commits at once (its own
    # transaction, no BEGIN/COMMIT round trips); inside one it joins it.
    with _pg_cursor() as cursor:
        cursor.execute(sql.CLAIM, [limit, dispatcher])
        return [row[0] for row in cursor.fetchall()]


def events_claim_batch(*, dispatcher: str, limit: int) -> list[str]:
    """Claims as ``events_claim`` does, and returns what ``events_deliver_batch`` finds
    the batch by: the address of each claimed row (sql.CLAIM_ADDRESSES, which says why
    that is safe and what it saves)."""
    with _pg_cursor() as cursor:
        cursor.execute(sql.CLAIM_ADDRESSES, [limit, dispatcher])
        return [row[0] for row in cursor.fetchall()]


def _uuid_array(ids: Iterable[uuid.UUID | str]) -> str:
    """A batch's ids as one PostgreSQL array literal (cast to uuid[] by the statement):
    psycopg adapts a list element by element, checking each for quoting, ~1 ms a batch
    of 500 in a worker; the cast rejects anything that is not a UUID."""
    return "{" + ",".join(map(str, ids)) + "}"


def _tid_array(addresses: Iterable[str]) -> str:
    """Row addresses ("(page,item)", as ctid::text gives them) as one tid[] literal: each
    quoted, since it holds a comma; the cast rejects anything that is not an address."""
    return "{" + ",".join(f'"{address}"' for address in addresses) + "}"


def events_mark_sent(*, event_ids: list[uuid.UUID] | list[str], dispatcher: str) -> int:
    """PROCESSING events still claimed by ``dispatcher`` → SENT, in one statement.
    Returns how many moved; an event whose claim was taken away is left alone."""
    if not event_ids:
        return 0
    # One array parameter instead of an IN list of len(event_ids) placeholders.
    with _pg_cursor() as cursor:
        cursor.execute(sql.MARK_SENT, [_uuid_array(event_ids), dispatcher])
        return cursor.rowcount


def events_claimed(*, event_ids: Iterable[uuid.UUID | str], dispatcher: str) -> list[OutboxEvent]:
    """The events of a claim that are still PROCESSING under it, in claim order, with the
    fields handlers read (id, kind, aggregate, payload, attempts); others are deferred."""
    return _events(_read(sql.CLAIMED, [_uuid_array(event_ids), dispatcher]))


def _events(rows: list[tuple[Any, ...]]) -> list[OutboxEvent]:
    """Instances as the ORM would make them (the handlers' interface) from rows of
    HANDLER_FIELDS (columns after those are ignored); only the payload needs converting
    (jsonb text)."""
    decode: Any = OutboxEvent._meta.get_field("payload").from_db_value
    db, conn = connection.alias, connections[connection.alias]
    if signals.pre_init.has_listeners(OutboxEvent) or signals.post_init.has_listeners(OutboxEvent):
        return [
            OutboxEvent.from_db(
                db, sql.HANDLER_FIELDS, (*row[:4], decode(row[4], None, conn), row[5])
            )
            for row in rows
        ]
    return [_loaded_event(db, (*row[:4], decode(row[4], None, conn), row[5])) for row in rows]


def event_retry_or_fail(
    *, event_id: uuid.UUID, dispatcher: str | None, error: BaseException | str
) -> str | None:
    return EVENT_WORK.retry_or_fail(pk=event_id, worker=dispatcher, error=error)


def event_fail(*, event_id: uuid.UUID, dispatcher: str, reason: str) -> bool:
    """A failure no retry can mend (no handler for the kind): FAILED at once, with alert."""
    return EVENT_WORK.fail(pk=event_id, worker=dispatcher, reason=reason)


def events_expire_claims() -> int:
    """PROCESSING past the claim timeout (the dispatcher or worker died) → NEW (or FAILED)."""
    return EVENT_WORK.expire_claims(claim_timeout=settings.PRICEFEED_OUTBOX_CLAIM_TIMEOUT)


def _loaded_event(db: str, values: tuple[Any, ...]) -> OutboxEvent:
    """An instance of HANDLER_FIELDS as ``from_db`` makes it, the other fields deferred,
    without ``Model.__init__``: for a batch of 500 that walked every field of every
    event, half of a worker's Python time. Used only while nothing listens to the model's
    init signals (``__init__`` would send them)."""
    event = OutboxEvent.__new__(OutboxEvent)
    state = ModelState()
    state.adding, state.db = False, db
    # A field missing from __dict__ is deferred: read from the database on first use.
    event.__dict__.update(zip(sql.HANDLER_FIELDS, values, strict=True), _state=state)
    return event


def events_deliver(*, event_ids: Iterable[uuid.UUID | str], dispatcher: str) -> dict[str, int]:
    """Runs the handlers for a claimed batch and records the results: the successes of
    each kind in one UPDATE, each failure in its own short transaction. Events no longer
    claimed by ``dispatcher`` are left alone."""
    events = events_claimed(event_ids=event_ids, dispatcher=dispatcher)
    return _deliver(
        events, dispatcher, lambda done: events_mark_sent(event_ids=done, dispatcher=dispatcher)
    )


def events_deliver_batch(*, batch: list[str], dispatcher: str) -> dict[str, int]:
    """``events_deliver`` for what ``events_claim_batch`` returned: the batch is read
    and its successes marked by the rows' addresses (sql.CLAIMED_AT, MARK_SENT_AT)."""
    rows = _read(sql.CLAIMED_AT, [_tid_array(batch), dispatcher])
    address = {row[0]: row[-1] for row in rows}

    def mark_sent(done: list[uuid.UUID]) -> int:
        if not done:
            return 0
        with _pg_cursor() as cursor:
            cursor.execute(sql.MARK_SENT_AT, [_tid_array(address[pk] for pk in done), dispatcher])
            marked = cursor.rowcount
        if marked < len(done):
            # Only if something changed a claimed row after all (its address now finds
            # nothing; no code does today): those still under the claim, found by id.
            marked += events_mark_sent(event_ids=done, dispatcher=dispatcher)
        return marked

    return _deliver(_events(rows), dispatcher, mark_sent)


def _deliver(
    events: list[OutboxEvent], dispatcher: str, mark_sent: Callable[[list[uuid.UUID]], int]
) -> dict[str, int]:
    """The handlers over claimed ``events``; ``mark_sent`` records a kind's successes
    (by id or by address) and returns how many it marked."""
    from .handlers import handler_for

    counts = {"sent": 0, "retry": 0, "failed": 0}
    by_kind: dict[str, list[OutboxEvent]] = {}
    for event in events:
        by_kind.setdefault(event.kind, []).append(event)
    for kind, batch in by_kind.items():
        handle = handler_for(kind)
        if handle is None:
            for event in batch:
                event_fail(
                    event_id=event.id,
                    dispatcher=dispatcher,
                    reason=Text(NO_HANDLER, kind=repr(kind)),
                )
                counts["failed"] += 1
            continue
        try:
            results = handle(batch)
        except Exception as exc:  # the whole batch failed (e.g. the server is down)
            logger.exception("handler failed kind=%s events=%s", kind, len(batch))
            results = {event.id: exc for event in batch}
        done = []
        for event in batch:
            error = results.get(event.id, RuntimeError("handler returned no result"))
            if error is None:
                done.append(event.id)
            else:
                outcome = event_retry_or_fail(event_id=event.id, dispatcher=dispatcher, error=error)
                counts["failed" if outcome == Status.FAILED else "retry"] += 1
        # One UPDATE for the batch's successes, still conditional on the claim.
        counts["sent"] += mark_sent(done)
    return counts


def events_retry_now(*, event_ids: Iterable[uuid.UUID]) -> int:
    """Operator action: NEW events waiting for a backoff become due now."""
    moved = OutboxEvent.objects.filter(id__in=list(event_ids), status=Status.NEW).update(
        next_attempt_at=Now()
    )
    transaction.on_commit(_wake_dispatchers)
    return moved


def events_requeue(*, event_ids: Iterable[uuid.UUID]) -> int:
    """Operator action: FAILED events start over (attempts reset) once the cause is fixed."""
    return EVENT_WORK.requeue(
        pks=event_ids, from_states=[Status.FAILED], enqueue=lambda _ids: _wake_dispatchers()
    )


def events_mark_failed(*, event_ids: Iterable[uuid.UUID], reason: str) -> int:
    """Operator action: NEW events are given up (a claimed one is left to its worker)."""
    return OutboxEvent.objects.filter(id__in=list(event_ids), status=Status.NEW).update(
        status=Status.FAILED, **stored("last_error", reason), finished_at=Now()
    )
