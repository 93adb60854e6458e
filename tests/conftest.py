"""Test setup: PostgreSQL is required (SQLite cannot show lease or claim races)."""

from __future__ import annotations

import pytest
from django.conf import settings

from mailboxes import services as mailbox_services
from mailboxes.models import Mailbox
from pricefeed import services
from pricefeed.models import PriceListConfig


def pytest_configure(config):
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        raise pytest.UsageError(
            "pricefeed's tests run on PostgreSQL: set DATABASE_URL=postgres://user@host/db "
            "or run ./scripts/test, which provides one."
        )


@pytest.fixture
def no_queue(monkeypatch):
    """Work is run by calling the services; nothing goes to django-q2."""
    queued = {"messages": [], "imports": []}
    monkeypatch.setattr(mailbox_services, "enqueue_processing", queued["messages"].extend)
    monkeypatch.setattr(services, "enqueue_imports", queued["imports"].extend)
    monkeypatch.setattr(mailbox_services, "enqueue_imports", queued["imports"].extend)
    return queued


@pytest.fixture
def mailbox(db):
    return Mailbox.objects.create(
        name="prices", host="imap.example", username="u", password="p", security="ssl"
    )


@pytest.fixture
def config(mailbox):
    return PriceListConfig.objects.create(
        mailbox=mailbox,
        name="Поставщик",
        sender_pattern="*@acme.test",
        filename_pattern="*",
    )
