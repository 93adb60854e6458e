"""Test setup: PostgreSQL is required (SQLite cannot show lease or claim races)."""

from __future__ import annotations

import pytest
from django.conf import settings


def pytest_configure(config):
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        raise pytest.UsageError(
            "pricefeed's tests run on PostgreSQL: set DATABASE_URL=postgres://user@host/db "
            "or run ./scripts/test, which provides one."
        )
