"""The SQL of the shared machinery (PostgreSQL only), by name."""

from __future__ import annotations

# Sends a notification on a channel when the transaction commits. Parameters: channel,
# payload.
NOTIFY = "SELECT pg_notify(%s, %s)"

# Subscribes a connection to a channel (a quoted identifier: channels are ours, never
# input).
LISTEN = 'LISTEN "{channel}"'

# django-q2's database queue (core/taskqueue.py, WakingORM); its table is django_q_ormq.
# A task and its wake-up in one statement: the NOTIFY is delivered when the enqueuer's
# transaction commits. Parameters: key, payload, lock (now), channel.
TASK_ENQUEUE = """
    WITH task AS (
        INSERT INTO django_q_ormq (key, payload, lock) VALUES (%s, %s, %s) RETURNING id
    )
    SELECT id, pg_notify(%s, '') FROM task
"""

# The queue's own bookkeeping commits without waiting for its WAL to reach the disk:
# ``synchronous_commit`` off for the statement's own transaction only (set_config's
# ``is_local``; evaluated once, an InitPlan). A take or an acknowledgement lost with a
# crash of the server costs nothing but a repeat: the task is taken again, or run again
# after ``retry`` and finds its work done. Each waited ~4 ms for the flush, and the one
# pusher takes the tasks one after another. Only in autocommit: in a caller's
# transaction it would make that whole transaction's commit asynchronous, so the two
# statements below have it as ``{async_commit}``, filled in or left empty
# (core/taskqueue.py).
ASYNC_COMMIT = "AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL"

# Takes up to ``bulk`` due tasks of a queue, oldest first, locked until ``until``: rows
# another cluster is taking are skipped, and a row is taken only while its lock has
# expired (checked again on the row as locked). Parameters by name: key, now, bulk, until.
TASK_TAKE = """
    UPDATE django_q_ormq SET lock = %(until)s
    WHERE id IN (
        SELECT id FROM django_q_ormq WHERE key = %(key)s AND lock < %(now)s
        ORDER BY id LIMIT %(bulk)s
        FOR UPDATE SKIP LOCKED
    ) AND lock < %(now)s {async_commit}
    RETURNING id, payload
"""

# A task acknowledged (done, or failed for good). Parameter: id.
TASK_DELETE = "DELETE FROM django_q_ormq WHERE id = %s {async_commit}"
