from __future__ import annotations

import pytest

from devkit.servers.cbr import CbrServer, start


@pytest.fixture
def cbr(settings):
    """The bank on loopback, and the settings that let pricing reach it: plain HTTP
    allowed only here (production keeps HTTPS with verified certificates)."""
    state = CbrServer()
    httpd = start(state)
    settings.PRICEFEED_RATES_URL = state.url
    settings.PRICEFEED_RATES_ALLOW_PLAIN = True
    settings.PRICEFEED_RATES_TIMEOUT = 0.5
    yield state
    state.released.set()
    httpd.shutdown()
    httpd.server_close()
