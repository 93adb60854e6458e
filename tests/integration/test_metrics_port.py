"""The metrics port of listen_mail and dispatch_outbox (PRICEFEED_LISTENER_METRICS_PORT,
PRICEFEED_OUTBOX_METRICS_PORT): a real process, a real IMAP server, scraped as
Prometheus scrapes it."""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

from devkit.servers import free_port
from mailboxes.models import InboundMessage

from .support import TcpProxy, mailbox_line, price_email, wait_until

TOKEN = "listener-port-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def get(port: int, headers: dict[str, str] | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    status, text = get(port, AUTH)
    assert status == 200, text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def answers(port: int) -> bool:
    try:
        return get(port, AUTH)[0] == 200
    except OSError:
        return False


def test_listen_mail_serves_its_connections_and_arrivals_on_its_port(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    port = free_port()
    env = {"PRICEFEED_LISTENER_METRICS_PORT": str(port), "PRICEFEED_METRICS_TOKEN": TOKEN}
    listener = manage("listen_mail", env=env)
    wait_until(lambda: answers(port), 30, "metrics port answering", on_timeout=listener.log)
    listener.wait_for_log(mailbox_line("prices", "listening token="))
    wait_until(lambda: mailbox.checkpoints.exists(), 10, "checkpoint created")
    connections = ("pricefeed_imap_connections_total", (("mailbox", "prices"),))
    recorded = ("pricefeed_messages_recorded_total", (("status", "RECEIVED"),))
    arrivals = ("pricefeed_message_arrival_to_recorded_seconds_count", ())
    before = scrape(port)
    appended = time.time()

    dovecot.append(price_email(subject="Prices by the port"))
    wait_until(
        lambda: InboundMessage.objects.exists(), 30, "message recorded", on_timeout=listener.log
    )
    wait_until(lambda: scrape(port).get(arrivals) == 1, 10, "arrival observed")
    after = scrape(port)
    tokenless = get(port)

    assert before[connections] == 1
    assert (
        before.get(("pricefeed_imap_connection_failures_total", (("mailbox", "prices"),)), 0) == 0
    )
    assert before.get(recorded, 0) == 0
    assert before[arrivals] == 0
    assert after[recorded] == 1
    # From Dovecot's INTERNALDATE (whole seconds, this host's clock) to the commit.
    waited = after[("pricefeed_message_arrival_to_recorded_seconds_sum", ())]
    assert 0 <= waited <= time.time() - appended + 1
    # The state gauges come along: the port answers what /metrics does.
    assert after[("pricefeed_state_up", ())] == 1
    assert after[("pricefeed_messages", (("status", "RECEIVED"),))] == 1
    assert tokenless[0] == 401
    assert "pricefeed_" not in tokenless[1]
    assert listener.stop() == 0
    assert not answers(port)


def test_a_connection_cut_counts_a_failure_and_then_a_reconnect(
    dovecot, make_mailbox, make_config, manage
):
    proxy = TcpProxy((dovecot.host, dovecot.port))
    try:
        mailbox = make_mailbox(dovecot, port=proxy.port)
        make_config(mailbox)
        port = free_port()
        env = {"PRICEFEED_LISTENER_METRICS_PORT": str(port), "PRICEFEED_METRICS_TOKEN": TOKEN}
        listener = manage("listen_mail", env=env)
        listener.wait_for_log(mailbox_line("prices", "listening token="), timeout=30)
        wait_until(lambda: answers(port), 30, "metrics port answering", on_timeout=listener.log)
        connections = ("pricefeed_imap_connections_total", (("mailbox", "prices"),))
        failures = ("pricefeed_imap_connection_failures_total", (("mailbox", "prices"),))
        reconnects = ("pricefeed_imap_reconnects_total", (("mailbox", "prices"),))
        before = scrape(port)

        proxy.cut()
        wait_until(
            lambda: scrape(port).get(failures, 0) >= 1,
            30,
            "failure counted",
            on_timeout=listener.log,
        )
        proxy.restore()
        wait_until(
            lambda: scrape(port).get(reconnects, 0) == 1, 30, "reconnected", on_timeout=listener.log
        )
        after = scrape(port)
    finally:
        proxy.close()

    assert (before[connections], before.get(failures, 0), before.get(reconnects, 0)) == (1, 0, 0)
    assert after[connections] == 2
    assert after[failures] >= 1


def test_dispatch_outbox_serves_metrics_on_its_own_port(manage):
    port = free_port()
    env = {"PRICEFEED_OUTBOX_METRICS_PORT": str(port), "PRICEFEED_METRICS_TOKEN": TOKEN}
    dispatcher = manage("dispatch_outbox", env=env)

    wait_until(lambda: answers(port), 30, "metrics port answering", on_timeout=dispatcher.log)
    found = scrape(port)

    assert found[("pricefeed_state_up", ())] == 1
    assert found[("pricefeed_outbox_events", (("status", "NEW"),))] == 0
    assert get(port)[0] == 401
    assert dispatcher.stop() == 0


def test_a_trickling_client_neither_blinds_the_port_nor_holds_it(manage):
    """Slowloris: a client sends its request a byte a second. Scrapes are answered
    meanwhile, and the trickler is cut at the port's deadline (REQUEST_DEADLINE, 5 s;
    asserted generously: cut within 30 s, long before its 60 s of bytes run out)."""
    port = free_port()
    env = {"PRICEFEED_OUTBOX_METRICS_PORT": str(port), "PRICEFEED_METRICS_TOKEN": TOKEN}
    dispatcher = manage("dispatch_outbox", env=env)
    wait_until(lambda: answers(port), 30, "metrics port answering", on_timeout=dispatcher.log)
    cut = threading.Event()
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 60

    def trickle(sock: socket.socket) -> None:
        try:
            for byte in request:
                sock.sendall(bytes([byte]))
                if cut.wait(1):
                    return
                ready, _, _ = select.select([sock], [], [], 0)
                if ready and sock.recv(1) == b"":
                    break  # the server closed it
        except OSError:
            pass  # reset by the server
        cut.set()

    with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
        started = time.monotonic()
        trickler = threading.Thread(target=trickle, args=(slow,), daemon=True)
        trickler.start()
        time.sleep(1.5)  # the trickle has begun
        meanwhile = get(port, AUTH)[0]
        held = not cut.is_set()
        trickler.join(60)
        lasted = time.monotonic() - started

    assert meanwhile == 200
    assert held  # the scrape was answered while the trickler was connected
    assert cut.is_set() and lasted < 30
    assert get(port, AUTH)[0] == 200
    dispatcher.wait_for_log("cut a connection from 127.0.0.1")
    assert dispatcher.stop() == 0
