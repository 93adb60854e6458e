"""From an e-mail in the mailbox to a notification in an SMTP server: the whole flow."""

from __future__ import annotations

import mailbox as mbox
import socket
import subprocess
import sys

import pytest

from notifications.models import Notification, Subscription
from pricefeed.devservers import free_port
from pricefeed.models import PriceImport

from .support import price_email, wait_until


@pytest.fixture
def smtp_sink(tmp_path):
    """aiosmtpd in its own process, storing what it receives in a Maildir."""
    port = free_port()
    path = tmp_path / "received"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            f"127.0.0.1:{port}",
            "-c",
            "aiosmtpd.handlers.Mailbox",
            str(path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_until(listening, 10, "SMTP sink listening")
    yield port, path
    process.terminate()
    process.wait(10)


def received(path):
    if not path.exists():
        return []
    return list(mbox.Maildir(str(path), create=False))


def test_an_imported_price_list_is_announced_once_to_each_subscriber(
    dovecot, make_mailbox, make_config, manage, smtp_sink
):
    port, path = smtp_sink
    mailbox = make_mailbox(dovecot)
    config = make_config(mailbox)
    ops = Subscription.objects.create(email="ops@buyer.test")
    ops.configs.add(config)
    Subscription.objects.create(reply_to_sender=True, on_succeeded=True)
    env = {"EMAIL_URL": f"smtp://127.0.0.1:{port}", "DEFAULT_FROM_EMAIL": "pricefeed@buyer.test"}
    manage("listen_mail")
    manage("qcluster", env=env)
    manage("dispatch_outbox", env=env)

    dovecot.append(price_email(sender="Sales <sales@acme.test>", subject="Прайс на декабрь"))

    wait_until(lambda: len(received(path)) == 2, 60, "two notifications delivered")
    mails = received(path)
    assert sorted(m["To"] for m in mails) == ["ops@buyer.test", "sales@acme.test"]
    price_import = PriceImport.objects.get()
    assert all(config.name in m["Subject"] and "succeeded" in m["Subject"] for m in mails)
    notifications = {n.recipient: n for n in Notification.objects.all()}
    assert {m["Message-ID"] for m in mails} == {n.message_id for n in notifications.values()}
    assert {n.status for n in notifications.values()} == {Notification.Status.SENT}
    assert all(n.price_import_id == price_import.pk for n in notifications.values())
