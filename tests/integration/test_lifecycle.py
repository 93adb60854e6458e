"""listen_mail as an operator runs it: clean stops, and admin changes without restarts."""

from __future__ import annotations

import re
import signal
import time

import pytest

from mailboxes.models import InboundMessage, InstanceHeartbeat, Mailbox, MailboxLease

from .support import mailbox_line, price_email, wait_until


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_releases_leases_marks_the_heartbeat_and_exits_zero(
    dovecot, make_mailbox, make_config, manage, signum
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    listener = manage("listen_mail", env={"PRICEFEED_INSTANCE_ID": "stopper"})
    wait_until(lambda: mailbox.checkpoints.exists(), 15, "listening")
    assert MailboxLease.objects.get(mailbox=mailbox).owner == "stopper"

    listener.signal(signum)

    assert listener.wait(10) == 0
    lease = MailboxLease.objects.get(mailbox=mailbox)
    assert lease.owner == ""  # released: another instance may take it at once
    assert InstanceHeartbeat.objects.get(instance_id="stopper").stopping is True
    assert re.search(r"(?m)listen_mail stopped.* instance_id=stopper(?: |$)", listener.log())


def test_admin_changes_reach_a_running_listener_without_a_restart(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    listener = manage("listen_mail")
    dovecot.append(price_email(subject="one"))
    wait_until(lambda: InboundMessage.objects.count() == 1, 15, "first message")

    # Disabled: the listener stops and lets go of the mailbox.
    Mailbox.objects.filter(pk=mailbox.pk).update(enabled=False)
    listener.wait_for_log(mailbox_line("prices", "mailbox disabled or removed: stopping"), 10)
    wait_until(lambda: MailboxLease.objects.get(mailbox=mailbox).owner == "", 10, "released")
    dovecot.append(price_email(subject="while disabled"))

    # Enabled again: it comes back and catches up from its checkpoint.
    Mailbox.objects.filter(pk=mailbox.pk).update(enabled=True)
    wait_until(lambda: InboundMessage.objects.count() == 2, 15, "caught up after enabling")

    # A wrong password: it reconnects with the new settings and says what is wrong.
    mailbox.refresh_from_db()
    mailbox.password = "wrong"
    mailbox.save()
    listener.wait_for_log(mailbox_line("prices", "mailbox settings changed: reconnecting"), 10)
    wait_until(
        lambda: "authentication failed" in Mailbox.objects.get(pk=mailbox.pk).last_error,
        15,
        "auth error shown",
    )
    # Fixed: it recovers and records new mail.
    mailbox.password = dovecot.password
    mailbox.save()
    wait_until(lambda: Mailbox.objects.get(pk=mailbox.pk).last_error == "", 15, "recovered")
    dovecot.append(price_email(subject="after fix"))
    wait_until(lambda: InboundMessage.objects.count() == 3, 15, "recorded after the fix")
    assert sorted(InboundMessage.objects.values_list("subject", flat=True)) == [
        "after fix",
        "one",
        "while disabled",
    ]


def test_admin_saves_reach_listeners_at_once_through_notify(
    dovecot, make_mailbox, make_config, manage
):
    """With a 60 s poll, only NOTIFY can make a listener react within seconds."""
    mailbox = make_mailbox(dovecot)
    config = make_config(mailbox)
    listener = manage("listen_mail", env={"PRICEFEED_CONFIG_POLL_INTERVAL": "60"})
    listener.wait_for_log(mailbox_line("prices", "listening token="), 20)

    mailbox.enabled = False
    mailbox.save()  # what the admin form does
    listener.wait_for_log(mailbox_line("prices", "mailbox disabled or removed: stopping"), 5)
    wait_until(lambda: MailboxLease.objects.get(mailbox=mailbox).owner == "", 5, "released")

    mailbox.enabled = True
    mailbox.save()
    listener.wait_for_log(mailbox_line("prices", "listening token="), 5, count=2)

    config.filename_pattern = "*.xlsx"
    config.save()  # configs change the weight: the listener looks again, keeps its lease
    mailbox.password = "changed"
    mailbox.save()
    listener.wait_for_log(mailbox_line("prices", "mailbox settings changed: reconnecting"), 5)


def test_a_second_sigterm_exits_at_once_and_loses_nothing(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    for n in range(30):
        dovecot.append(price_email(subject=f"m{n}"))
    # The listener fetches a batch, then stalls before recording it: work in flight,
    # and a grace period long enough that only a second signal ends it quickly.
    env = {
        "PRICEFEED_SHUTDOWN_GRACE": "60",
        "PRICEFEED_SLOW_AT": "after_fetch",
        "PRICEFEED_SLOW_SECONDS": "120",
    }
    listener = manage("listen_mail", env=env)
    listener.wait_for_log("slow point reached point=after_fetch", 20)

    listener.signal(signal.SIGTERM)
    listener.wait_for_log("signal SIGTERM: finishing in-flight work", 5)
    time.sleep(1)
    assert listener.alive  # waiting for the batch in flight
    started = time.monotonic()
    listener.signal(signal.SIGTERM)
    listener.wait(10)
    assert time.monotonic() - started < 5
    assert "second signal: exiting now" in listener.log()
    assert InboundMessage.objects.count() == 0  # the stalled batch was never recorded

    # Whatever it had not recorded is still on the server, above the checkpoint.
    manage("listen_mail")
    wait_until(lambda: InboundMessage.objects.count() == 30, 30, "all 30 recorded")
    subjects = list(InboundMessage.objects.values_list("subject", flat=True))
    assert sorted(subjects) == sorted(f"m{n}" for n in range(30))
