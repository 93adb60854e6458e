"""Reading inbound mail for other apps: the stored bytes of a message."""

from __future__ import annotations

from django.db import connection

from core.db import postgresql

from . import sql
from .exceptions import RawMessageMissing
from .models import InboundMessage


def message_raw(message_id: int) -> bytes:
    """The stored raw message. On PostgreSQL it is read in binary: the ORM's text
    transfer sends bytea as hex (twice the size) and took ~1.4 s for a 100 MB message.
    Raises RawMessageMissing when the message was refused unread."""
    if postgresql():
        import psycopg

        connection.ensure_connection()
        # Django's cursors bind on the client side, which cannot ask for binary results.
        with psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(sql.RAW_MESSAGE, [message_id], binary=True)
            row = cursor.fetchone()
        raw = row[0] if row else None
    else:
        raw = InboundMessage.objects.values_list("raw", flat=True).get(pk=message_id)
    if raw is None:
        raise RawMessageMissing("the message's raw bytes are not stored")
    return bytes(raw)
