"""Fixtures of the monitoring tests: production-like HTTP settings, a closed port."""

from __future__ import annotations

import socket

import pytest

from monitoring import probes

# Not in ALLOWED_HOSTS below: what kubelet sends as Host (the pod's address).
POD_HOST = "10.42.0.17:8000"


@pytest.fixture
def production(settings):
    """Settings as with DEBUG off in production: HTTPS only, one allowed host."""
    settings.DEBUG = False
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["pricefeed.example.com"]
    return settings


@pytest.fixture
def closed_port():
    """A port of 127.0.0.1 that refuses connections: bound for the test but never
    listening, so no other process can start listening on it meanwhile."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture(autouse=True)
def fresh_probe_log(monkeypatch):
    """Each test starts with no readiness failure logged yet in this process."""
    monkeypatch.setattr(probes, "_logged", {})
