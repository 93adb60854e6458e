"""Raw messages are stored with lz4 where the PostgreSQL server has it."""

from __future__ import annotations

import pytest
from django.db import connection

from mailboxes.models import InboundMessage

pytestmark = pytest.mark.django_db


def test_raw_messages_are_compressed_with_lz4():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        (has_lz4,) = cursor.fetchone()
        cursor.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'raw'",
            [InboundMessage._meta.db_table],
        )
        (method,) = cursor.fetchone()
    assert method == ("l" if has_lz4 else "")
