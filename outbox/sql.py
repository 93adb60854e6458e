"""The outbox's own SQL for the dispatch path (PostgreSQL), by name, one purpose each.

Statuses are written into the text from the model's enum: as literals, not parameters,
so that the planner can match ``status = 'NEW'`` against the partial index
``outbox_new_due`` even in a generic prepared plan.
"""

from __future__ import annotations

from .models import EventStatus, OutboxEvent

_TABLE = OutboxEvent._meta.db_table
_NEW = f"'{EventStatus.NEW.value}'"
_PROCESSING = f"'{EventStatus.PROCESSING.value}'"
_SENT = f"'{EventStatus.SENT.value}'"


# Due NEW events, oldest due first, skipping rows other dispatchers hold: reads the
# partial index ``outbox_new_due`` in (next_attempt_at, id) order and stops after
# ``limit`` rows it could lock. Parameter: limit.
def _due(column: str) -> str:
    return f"""
    SELECT {column} FROM {_TABLE}
    WHERE status = {_NEW} AND next_attempt_at <= statement_timestamp()
    ORDER BY next_attempt_at, id
    LIMIT %s
    FOR UPDATE SKIP LOCKED
"""


DUE = _due("id")


# The claim: DUE marked PROCESSING in the same statement. The UPDATE finds the rows it
# locked again by their physical address (ctid, a Tid Scan: no index is read), which
# cannot change while the statement holds their locks. Finding them by primary key (an
# ``id = ANY(…)`` index scan) cost a descent of the whole key per row, one level deeper
# and ~400 more buffers a claim at 1M rows than at 10k; ``UPDATE … FROM due WHERE id =
# due.id`` let the planner pick a hash join over a sequential scan of a small table.
# Nothing in the statement reads more than ``limit`` rows, whatever the SENT rows.
# Parameters: limit, claim id.
def _claim(returning: str) -> str:
    return f"""
    WITH due AS ({_due("ctid")})
    UPDATE {_TABLE} AS event
    SET status = {_PROCESSING}, claimed_by = %s, claimed_at = statement_timestamp(),
        attempts = event.attempts + 1
    WHERE event.ctid = ANY(ARRAY(SELECT ctid FROM due))
    RETURNING {returning}
"""


CLAIM = _claim("event.id")

# The same claim, returning where each claimed row now lies (the ctid of the version the
# claim wrote) for the worker to find the batch by: CLAIMED_AT and MARK_SENT_AT.
#
# Why that is safe: a version of a row carrying this claim's id (claim ids are unique,
# services.new_claim_id) and PROCESSING can only be the one the claim wrote, and a
# statement sees only the live version at an address. Once anything else has changed
# the row (the sweep that ends an expired claim clears claimed_by), that version is dead
# and the address finds nothing, or finds another row's version that does not carry the
# claim: the event is left alone, as a lookup by id that checks the claim leaves it. A
# table rewrite (VACUUM FULL, CLUSTER) between the claim and the task moves rows without
# changing them: the task then finds nothing, and its events wait for the claim timeout
# and are claimed again. Late, never wrong.
#
# Why it is worth it: the id lookups (CLAIMED, MARK_SENT) descended the primary key once
# per event and then visited every version the key points to (each claim and each
# result writes a new one, the old still indexed until vacuum); by address each event
# costs one heap fetch. Measured in bench/outbox.py's real path (50k no-op events, six
# alternating rounds, with the frozen collector of core.workers): the drain's median
# went from 1.51 s to 1.15 s, its CPU from 3.3 s to 2.5 s.
CLAIM_ADDRESSES = _claim("event.ctid::text")


# A batch's successes, still conditional on the claim. Parameters: event ids, claim id.
def _mark_sent(where: str) -> str:
    return f"""
    UPDATE {_TABLE}
    SET status = {_SENT}, sent_at = statement_timestamp(), finished_at = statement_timestamp(),
        claimed_by = '', claimed_at = NULL, last_error = '', last_error_text = '{{}}'::jsonb
    WHERE {where} AND status = {_PROCESSING} AND claimed_by = %s
"""


MARK_SENT = _mark_sent("id = ANY(%s::uuid[])")

# The same by the addresses CLAIMED_AT read (nothing changes a claimed row but its own
# results). Parameters: addresses (tid[]), claim id.
MARK_SENT_AT = _mark_sent("ctid = ANY(%s::tid[])")

# What a handler gets of an event: everything it may read, not the bookkeeping columns.
HANDLER_FIELDS = ("id", "kind", "aggregate_type", "aggregate_id", "payload", "attempts")

# The events of a claim still held under it, in claim order, with HANDLER_FIELDS.
# Parameters: event ids, claim id.
CLAIMED = f"""
    SELECT {", ".join(HANDLER_FIELDS)} FROM {_TABLE}
    WHERE id = ANY(%s::uuid[]) AND status = {_PROCESSING} AND claimed_by = %s
    ORDER BY next_attempt_at, id
"""

# The same, found by the addresses CLAIM_ADDRESSES returned (a Tid Scan), with each
# row's address last. Parameters: addresses (tid[]), claim id.
CLAIMED_AT = f"""
    SELECT {", ".join(HANDLER_FIELDS)}, ctid::text FROM {_TABLE}
    WHERE ctid = ANY(%s::tid[]) AND status = {_PROCESSING} AND claimed_by = %s
    ORDER BY next_attempt_at, id
"""

# A dispatcher's connections commit without waiting for the WAL flush (session-wide).
# What a crash of the server may lose of their last ~0.6 s is recoverable: a claim lost
# leaves its events NEW; a hand-off lost leaves them PROCESSING until the claim timeout,
# as a dispatcher that died after its claim does; a sweep lost is done again (an event
# it failed may then be alerted twice). The flush cost ~4 ms twice a batch (claim, then
# enqueue), and the dispatch loops wait for nothing else. A worker's results
# (MARK_SENT) still wait for it.
COMMIT_WITHOUT_FLUSH = "SET synchronous_commit = off"

# Wakes idle dispatchers (they LISTEN on the channel). Parameter: channel.
WAKE = "SELECT pg_notify(%s, '')"


# Many events of one kind in one INSERT (services.publish_many): the rows come as
# arrays, one parameter a column, unnested on the server; the other columns take their
# defaults (NEW, due now). Parameters: ids (uuid[]), kind, aggregate types (text[]),
# aggregate ids (text[]), payloads (jsonb[]).
PUBLISH_MANY = f"""
INSERT INTO {_TABLE} (id, kind, aggregate_type, aggregate_id, payload, status, attempts,
                      claimed_by, last_error)
SELECT e.id, %s, e.aggregate_type, e.aggregate_id, e.payload, {_NEW}, 0, '', ''
FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::jsonb[])
     AS e (id, aggregate_type, aggregate_id, payload)
"""

# An event per row of a query (services.publish_select), the payloads built by the
# query: SELECT_ROWS is replaced by it (two columns: the row's number from 0 and its
# payload as jsonb); a row's id is that element of the ids given (past their end: no
# id, and the NOT NULL refuses the whole statement). Named parameters: outbox_ids
# (uuid[]), outbox_kind, outbox_type, outbox_aggregate, and the query's own.
PUBLISH_SELECT = f"""
INSERT INTO {_TABLE} (id, kind, aggregate_type, aggregate_id, payload, status, attempts,
                      claimed_by, last_error)
SELECT (%(outbox_ids)s::uuid[])[e.n + 1], %(outbox_kind)s, %(outbox_type)s,
       %(outbox_aggregate)s, e.payload, {_NEW}, 0, '', ''
  FROM (SELECT_ROWS) AS e (n, payload)
 ORDER BY e.n
"""
