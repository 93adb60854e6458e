"""The SQL of the mailboxes app that the ORM cannot say (PostgreSQL only), by name."""

from __future__ import annotations

from .models import InboundMessage

# How long a lease takeover waits for a write in progress under the lease (ms).
SET_LOCK_TIMEOUT = "SET LOCAL lock_timeout = {milliseconds:d}"

# Ends a listener's session left idle inside a transaction (a frozen writer) (ms).
SET_IDLE_IN_TRANSACTION_TIMEOUT = "SET idle_in_transaction_session_timeout = {milliseconds:d}"

# A stored raw message, read with binary results (the ORM's text transfer doubles it).
RAW_MESSAGE = f"SELECT raw FROM {InboundMessage._meta.db_table} WHERE id = %s"

# Stores a raw message bound as a binary parameter, in pieces: the ORM binds on the
# client side, where bytea travels as a hex literal inside the query text (~7x the
# message in memory), and one binary parameter still costs twice its size in libpq's
# output buffer.
STORE_RAW_MESSAGE = f"UPDATE {InboundMessage._meta.db_table} SET raw = %b WHERE id = %s"
APPEND_RAW_MESSAGE = f"UPDATE {InboundMessage._meta.db_table} SET raw = raw || %b WHERE id = %s"
