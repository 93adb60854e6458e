"""Event metrics counted where things happen (core.metrics): messages recorded and their
wait from the server's INTERNALDATE, notifications sent and failed; and the metrics port
(core.metrics_server) that serves /metrics from processes other than the web process."""

from __future__ import annotations

import http.client
import smtplib
import socket
import ssl
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend
from django.db import transaction
from prometheus_client.parser import text_string_to_metric_families

from core import metrics, metrics_server
from core.metrics_server import MetricsPortError, MetricsServer, start_metrics_port
from devkit.servers import free_port
from devkit.servers.dovecot import _certificates
from mailboxes import recording
from mailboxes.leases import lease_acquire
from mailboxes.recording import Fetched
from notifications import services as notification_services
from notifications.models import Notification
from outbox import services as outbox_services
from pricefeed.models import PriceImport
from tests.factories import price_mail, receive, run_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_queue")]

TOKEN = "port-token-0123456789"
ARRIVAL = "pricefeed_message_arrival_to_recorded_seconds"


def sample(name: str, **labels: str) -> float:
    """This process's value of one event series (0 when it has none yet)."""
    return metrics.EVENTS.get_sample_value(name, labels) or 0.0


# -- arrival to recorded ----------------------------------------------------------------------


def test_the_wait_from_the_servers_internaldate_is_observed_in_seconds():
    count, total = sample(f"{ARRIVAL}_count"), sample(f"{ARRIVAL}_sum")
    now = time.time()
    # An INTERNALDATE in the server's own zone, 7 seconds ago.
    arrived = datetime.fromtimestamp(now - 7, tz=timezone(timedelta(hours=3)))

    metrics.observe_arrival(arrived, now=now)

    assert sample(f"{ARRIVAL}_count") - count == 1
    assert sample(f"{ARRIVAL}_sum") - total == pytest.approx(7.0)


def test_a_server_clock_ahead_of_ours_counts_as_no_wait_and_no_date_as_nothing():
    count, total = sample(f"{ARRIVAL}_count"), sample(f"{ARRIVAL}_sum")
    zero = sample(f"{ARRIVAL}_bucket", le="0.5")
    now = time.time()

    metrics.observe_arrival(datetime.fromtimestamp(now + 30, tz=UTC), now=now)
    metrics.observe_arrival(None, now=now)
    metrics.observe_arrival(datetime.fromtimestamp(now - 5), now=now)  # naive: no zone

    assert sample(f"{ARRIVAL}_count") - count == 1
    assert sample(f"{ARRIVAL}_sum") == total
    assert sample(f"{ARRIVAL}_bucket", le="0.5") - zero == 1


@pytest.fixture
def lease(mailbox):
    lease = lease_acquire(mailbox_id=mailbox.pk, owner="instance-a", ttl=60)
    recording.checkpoint_sync(lease=lease, folder="INBOX", uidvalidity=1, start_uid=0)
    return lease


def test_a_recorded_message_is_counted_and_its_wait_observed_once_committed(
    lease, django_capture_on_commit_callbacks
):
    raw = price_mail()
    received = sample("pricefeed_messages_recorded_total", status="RECEIVED")
    count, total = sample(f"{ARRIVAL}_count"), sample(f"{ARRIVAL}_sum")
    arrived = datetime.now(UTC) - timedelta(seconds=42)
    item = Fetched(uid=1, size=len(raw), raw=raw, internal_date=arrived)

    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            recording.messages_record(lease=lease, folder="INBOX", uidvalidity=1, fetched=[item])
            # Not before the records are durable.
            assert sample(f"{ARRIVAL}_count") == count
    # The same message again is not recorded again, nor counted.
    with django_capture_on_commit_callbacks(execute=True):
        recording.messages_record(lease=lease, folder="INBOX", uidvalidity=1, fetched=[item])

    assert sample("pricefeed_messages_recorded_total", status="RECEIVED") - received == 1
    assert sample(f"{ARRIVAL}_count") - count == 1
    assert 42 <= sample(f"{ARRIVAL}_sum") - total < 60


def test_a_message_refused_unread_counts_as_rejected(
    lease, settings, django_capture_on_commit_callbacks
):
    settings.PRICEFEED_MAX_MESSAGE_BYTES = 10
    rejected = sample("pricefeed_messages_recorded_total", status="REJECTED")
    header = b"Message-ID: <big@acme.test>\r\nSubject: big\r\n\r\n"

    with django_capture_on_commit_callbacks(execute=True):
        recording.messages_record(
            lease=lease,
            folder="INBOX",
            uidvalidity=1,
            fetched=[Fetched(uid=5, size=10_000, header=header)],
        )

    assert sample("pricefeed_messages_recorded_total", status="REJECTED") - rejected == 1


# -- notifications ------------------------------------------------------------------------------


class RejectingBackend(LocmemBackend):
    """locmem, but refuses mail to addresses starting with "bad" like a server's 550."""

    def send_messages(self, messages):
        for message in messages:
            if any(r.startswith("bad") for r in message.to):
                raise smtplib.SMTPRecipientsRefused({message.to[0]: (550, b"no such user")})
        return super().send_messages(messages)


def _send_to(price_import: PriceImport, recipients: list[str]) -> None:
    notifications = Notification.objects.bulk_create(
        [
            Notification(
                kind="import_outcome",
                price_import=price_import,
                recipient=r,
                outcome=price_import.status,
            )
            for r in recipients
        ]
    )
    with transaction.atomic():
        for n in notifications:
            outbox_services.publish(notification_services.SEND_EVENT, n, {"notification_id": n.pk})
    ids = outbox_services.events_claim(dispatcher="d", limit=1000)
    events = [
        e
        for e in outbox_services.events_claimed(event_ids=ids, dispatcher="d")
        if e.kind == notification_services.SEND_EVENT
    ]
    notification_services.notifications_send(events)


def test_notifications_sent_errors_and_failed_are_counted(mailbox, config, settings, mailoutbox):
    settings.EMAIL_BACKEND = f"{__name__}.RejectingBackend"
    (price_import,) = run_all(receive(mailbox, [("p.csv", b"sku;price\nA-1;1\n")]))
    sent = sample("pricefeed_notifications_sent_total")
    errors = sample("pricefeed_notification_send_errors_total")
    failed = sample("pricefeed_notifications_failed_total")

    # A first attempt of three: one refused, to be retried.
    _send_to(price_import, ["a@buyer.test", "b@buyer.test", "bad@buyer.test"])
    assert sample("pricefeed_notifications_sent_total") - sent == 2
    assert sample("pricefeed_notification_send_errors_total") - errors == 1
    assert sample("pricefeed_notifications_failed_total") == failed

    # On the last attempt a refusal is final.
    settings.PRICEFEED_OUTBOX_MAX_ATTEMPTS = 1
    _send_to(price_import, ["bad2@buyer.test"])
    assert sample("pricefeed_notifications_failed_total") - failed == 1
    assert sample("pricefeed_notification_send_errors_total") - errors == 2
    assert Notification.objects.filter(status=Notification.Status.FAILED).count() == 1


# -- the metrics port ---------------------------------------------------------------------------


def get(server: MetricsServer, path: str = "/metrics", method: str = "GET", **headers: str):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.fixture
def port_server(settings):
    settings.DEBUG = False
    settings.PRICEFEED_METRICS_TOKEN = TOKEN
    server = MetricsServer("127.0.0.1", 0).start()
    yield server
    server.stop()


def test_the_port_answers_what_metrics_answers_with_the_token(port_server):
    status, headers, body = get(port_server, Authorization=f"Bearer {TOKEN}")

    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    # The state gauges (set by the monitoring app) and the event metrics.
    assert {"pricefeed_state_up", "pricefeed_messages", "pricefeed_imap_connections"} <= names
    assert "pricefeed_message_arrival_to_recorded_seconds" in names


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, 401),
        ({"Authorization": f"Basic {TOKEN}"}, 401),
        ({"Authorization": "Bearer wrong"}, 403),
    ],
)
def test_the_port_refuses_as_metrics_does(port_server, headers, expected):
    status, answer_headers, body = get(port_server, **headers)

    assert status == expected
    assert b"pricefeed_" not in body
    if expected == 401:
        assert answer_headers["WWW-Authenticate"].startswith("Bearer")


def test_the_port_without_a_token_and_debug_off_is_refused(port_server, settings):
    settings.PRICEFEED_METRICS_TOKEN = ""

    status, _headers, body = get(port_server)

    assert status == 403
    assert b"PRICEFEED_METRICS_TOKEN" in body


def test_the_port_answers_only_metrics_and_head_without_a_body(port_server):
    auth = {"Authorization": f"Bearer {TOKEN}"}

    assert get(port_server, "/", **auth)[0] == 404
    assert get(port_server, "/admin/", **auth)[0] == 404
    status, _headers, body = get(port_server, method="HEAD", **auth)
    assert (status, body) == (200, b"")


def test_port_0_serves_nothing_and_a_taken_port_is_an_error_naming_the_setting(settings):
    settings.PRICEFEED_METRICS_ADDRESS = "127.0.0.1"
    assert start_metrics_port(0, "PRICEFEED_LISTENER_METRICS_PORT") is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        with pytest.raises(MetricsPortError, match="PRICEFEED_LISTENER_METRICS_PORT"):
            start_metrics_port(port, "PRICEFEED_LISTENER_METRICS_PORT")


@pytest.mark.parametrize("address", ["0.0.0.0", "10.0.0.7", "::", "metrics.example"])
def test_off_loopback_the_port_refuses_to_start_without_tls(settings, address):
    settings.PRICEFEED_METRICS_ADDRESS = address
    settings.PRICEFEED_METRICS_TLS_CERT = settings.PRICEFEED_METRICS_TLS_KEY = ""

    with pytest.raises(MetricsPortError, match=r"without TLS.*in clear"):
        start_metrics_port(free_port(), "PRICEFEED_LISTENER_METRICS_PORT")


def test_with_a_certificate_the_port_serves_https_off_loopback(settings, tmp_path):
    ca_pem, cert_pem, key_pem = _certificates(["127.0.0.1", "localhost"])
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    settings.DEBUG = False
    settings.PRICEFEED_METRICS_TOKEN = TOKEN
    settings.PRICEFEED_METRICS_ADDRESS = "0.0.0.0"
    settings.PRICEFEED_METRICS_TLS_CERT = str(tmp_path / "cert.pem")
    settings.PRICEFEED_METRICS_TLS_KEY = str(tmp_path / "key.pem")
    server = start_metrics_port(free_port(), "PRICEFEED_LISTENER_METRICS_PORT")
    assert server is not None
    try:
        trusted = ssl.create_default_context(cadata=ca_pem.decode())
        conn = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=30, context=trusted)
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        body = response.read()
        conn.close()
        plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        with pytest.raises((http.client.HTTPException, OSError)):
            plain.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            plain.getresponse().read()
        plain.close()
    finally:
        server.stop()

    assert server.url.startswith("https://")
    assert response.status == 200 and b"pricefeed_state_up" in body


def scrape_once_free(server, bound: float = 10.0) -> int:
    """The status of the first scrape answered once the slots are freed (refused ones
    are asked again until ``bound`` seconds, a liveness bound)."""
    give_up = time.monotonic() + bound
    while True:
        try:
            status, _headers, _body = get(server, Authorization=f"Bearer {TOKEN}")
            return status
        except (http.client.HTTPException, OSError):
            if time.monotonic() > give_up:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize("cap", ["MAX_CONNECTIONS", "PER_ADDRESS"])
def test_a_connection_past_the_cap_is_closed_and_scrapes_come_back(settings, monkeypatch, cap):
    """Idle connections fill every slot (MAX_CONNECTIONS, or PER_ADDRESS for this
    client, made 2 here): one more is closed at once; once the deadline cuts them,
    scrapes are answered again."""
    monkeypatch.setattr(metrics_server, cap, 2)
    settings.DEBUG = False
    settings.PRICEFEED_METRICS_TOKEN = TOKEN
    server = MetricsServer("127.0.0.1", 0).start()
    try:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
        time.sleep(0.5)  # both accepted and holding their slots
        with pytest.raises((http.client.HTTPException, OSError)):
            get(server, Authorization=f"Bearer {TOKEN}")
        for sock in idle:
            sock.settimeout(30)
            assert sock.recv(1) == b""  # cut at the deadline
            sock.close()
        # The client sees the cut as the socket shuts down; its thread frees the slot
        # a moment later. A scrape in between is refused, as it should be: ask again.
        status = scrape_once_free(server)
    finally:
        server.stop()

    assert status == 200
