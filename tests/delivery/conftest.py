from __future__ import annotations

import pytest

from devkit.servers.webhook import WebhookReceiver
from tests.requirements import require_rabbitmq

from .support import Rabbit


@pytest.fixture(autouse=True)
def plain_allowed(settings):
    """The tests' receivers listen on loopback without TLS."""
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = True
    settings.PRICEFEED_DELIVERY_TIMEOUT = 5.0


@pytest.fixture
def receiver():
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def rabbit():
    require_rabbitmq()
    broker = Rabbit()
    yield broker
    broker.close()
