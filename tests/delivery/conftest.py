from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def plain_allowed(settings):
    """The tests' receivers listen on loopback without TLS."""
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = True
    settings.PRICEFEED_DELIVERY_TIMEOUT = 5.0
