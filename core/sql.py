"""The SQL of the shared machinery (PostgreSQL only), by name."""

from __future__ import annotations

# Sends a notification on a channel when the transaction commits. Parameters: channel,
# payload.
NOTIFY = "SELECT pg_notify(%s, %s)"

# Subscribes a connection to a channel (a quoted identifier: channels are ours, never
# input).
LISTEN = 'LISTEN "{channel}"'
