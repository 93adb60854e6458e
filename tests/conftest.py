"""Test setup: on PostgreSQL, the one engine (config.settings refuses any other).

The fixtures here are the only ``mailbox``, ``config`` and ``make_message``: their data
comes from tests/factories.py.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.utils import translation

from devkit.servers.webhook import WebhookReceiver
from mailboxes import processing
from mailboxes.models import InboundMessage, Mailbox
from pricefeed.imports import lifecycle
from pricefeed.models import PriceListConfig

from . import factories
from .delivery.support import Rabbit
from .requirements import require_rabbitmq

# The parts of the suite that start real servers and manage.py processes, marked
# ``integration`` as a whole (a pytestmark in a conftest.py marks nothing).
REAL_COMPONENTS = ("integration", "deploy")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent.name in REAL_COMPONENTS and item.path.parent.parent.name == "tests":
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def default_language():
    """Each test starts in LANGUAGE_CODE (English here): LocaleMiddleware activates the
    language of a request in the thread and leaves it active after the response, so a
    test that asked for Russian would otherwise leave the next one in Russian."""
    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def receiver():
    """A webhook receiver on loopback (the delivery and integration tests)."""
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def rabbit():
    """An exchange and queue of the test's own on the local RabbitMQ."""
    require_rabbitmq()
    broker = Rabbit()
    yield broker
    broker.close()


@pytest.fixture
def no_queue(monkeypatch):
    """Work is run by calling the services; nothing goes to django-q2."""
    queued = {"messages": [], "imports": []}
    monkeypatch.setattr(processing, "enqueue_processing", queued["messages"].extend)
    monkeypatch.setattr(lifecycle, "enqueue_imports", queued["imports"].extend)
    return queued


@pytest.fixture
def imports_wait(monkeypatch):
    """A message's imports wait PENDING for their own task, as larger files' do, instead
    of small files being imported by the task that read the message."""
    monkeypatch.setattr(lifecycle, "INLINE_IMPORT_BYTES", 0)


@pytest.fixture
def enqueued(monkeypatch) -> list[int]:
    """Collects the message ids handed to django-q2 instead of enqueueing them."""
    calls: list[int] = []
    monkeypatch.setattr(processing, "enqueue_processing", calls.extend)
    return calls


@pytest.fixture
def fast_password_hashing(settings):
    """admin_user hashes its password; the default PBKDF2 costs ~0.5 s per test."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def mailbox(db) -> Mailbox:
    return factories.create_mailbox()


@pytest.fixture
def config(mailbox) -> PriceListConfig:
    return factories.create_config(mailbox)


@pytest.fixture
def make_message(mailbox):
    """Creates an InboundMessage row directly (bypassing recording) in a given status,
    in ``mailbox`` unless given another."""

    def make(
        raw: bytes | None = factories.DEFAULT_RAW,
        *,
        status: str = InboundMessage.Status.RECEIVED,
        **fields: object,
    ) -> InboundMessage:
        return factories.create_message(
            fields.pop("mailbox", mailbox), raw, status=status, **fields
        )

    return make
