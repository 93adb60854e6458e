"""Webhooks over HTTPS: the receiver's certificate is verified by default."""

from __future__ import annotations

import pytest
from django.db import transaction

from delivery.kinds import EventKind
from delivery.models import Delivery, Webhook
from devkit.servers.dovecot import _certificates
from devkit.servers.webhook import WebhookReceiver
from outbox import services as outbox

from .support import SECRET


@pytest.fixture
def https_receiver(tmp_path):
    ca, cert, key = _certificates(["127.0.0.1", "localhost"])
    (tmp_path / "ca.pem").write_bytes(ca)
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    server = WebhookReceiver(tls=(str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))).start()
    yield server, tmp_path / "ca.pem"
    server.stop()


def _deliver_one(url: str) -> Delivery:
    hook = Webhook.objects.create(name="tls", url=url, secret=SECRET, kinds=list(EventKind))
    with transaction.atomic():
        outbox.publish(EventKind.PRICE_CHANGED, hook, {})
    while ids := outbox.events_claim(dispatcher="d", limit=10):
        outbox.events_deliver(event_ids=ids, dispatcher="d")
    return Delivery.objects.get()


def test_a_certificate_of_an_unknown_ca_is_refused(db, https_receiver, settings, monkeypatch):
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = False
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    server, _ca = https_receiver
    delivery = _deliver_one(server.url)
    assert delivery.status == Delivery.Status.FAILED
    assert "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert not server.received


def test_a_trusted_certificate_is_accepted(db, https_receiver, settings, monkeypatch):
    settings.PRICEFEED_DELIVERY_ALLOW_PLAIN = False
    server, ca = https_receiver
    # Stands in for a publicly certified receiver: OpenSSL's default store.
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    delivery = _deliver_one(server.url)
    assert delivery.status == Delivery.Status.SENT
    assert len(server.received) == 1
