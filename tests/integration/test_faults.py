"""Crashes, server restarts and UIDVALIDITY changes: every message recorded exactly once."""

from __future__ import annotations

import signal

from django_q.models import OrmQ

from mailboxes.models import InboundMessage, MailboxCheckpoint

from .support import mailbox_line, price_email, wait_until


def _count() -> int:
    return InboundMessage.objects.count()


def test_listener_killed_between_fetch_and_commit_records_the_message_once_after_restart(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    dovecot.append(price_email(subject="before crash"))
    crashing = manage("listen_mail", env={"PRICEFEED_CRASH_AT": "record_before_commit"})
    crashing.wait(20)
    assert crashing.process.returncode == -signal.SIGKILL
    assert "crash point reached point=record_before_commit" in crashing.log()
    assert _count() == 0
    # The lease of the dead instance is still held: a restart under another instance id
    # waits for it to expire (TTL 5 s in tests) and then takes over.
    manage("listen_mail")
    wait_until(lambda: _count() == 1, 30, "message recorded after restart")
    dovecot.append(price_email(subject="after restart"))
    wait_until(lambda: _count() == 2, 20, "new message recorded")
    assert sorted(InboundMessage.objects.values_list("subject", flat=True)) == [
        "after restart",
        "before crash",
    ]


def test_listener_killed_right_after_fetch_records_nothing_and_loses_nothing(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    dovecot.append(price_email(subject="one"))
    crashing = manage("listen_mail", env={"PRICEFEED_CRASH_AT": "after_fetch"})
    crashing.wait(20)
    assert crashing.process.returncode == -signal.SIGKILL
    assert _count() == 0
    manage("listen_mail")
    wait_until(lambda: _count() == 1, 30, "message recorded after restart")


def test_listener_killed_after_commit_does_not_record_twice(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    dovecot.append(price_email(subject="one"))
    # Killed after the commit but before processing was enqueued: the worst spot.
    crashing = manage("listen_mail", env={"PRICEFEED_CRASH_AT": "record_before_enqueue"})
    crashing.wait(20)
    assert crashing.process.returncode == -signal.SIGKILL
    assert _count() == 1
    assert not OrmQ.objects.exists()
    restarted = manage("listen_mail", env={"PRICEFEED_REQUEUE_AFTER": "1"})
    manage("qcluster")
    restarted.wait_for_log(mailbox_line("prices", "listening token="), 30)
    dovecot.append(price_email(subject="two"))
    wait_until(lambda: _count() == 2, 20, "second message recorded")
    assert sorted(InboundMessage.objects.values_list("subject", flat=True)) == ["one", "two"]
    # The message whose enqueue died with the process is swept up and processed.
    wait_until(
        lambda: InboundMessage.objects.filter(status="DONE").count() == 2, 30, "both processed"
    )


def test_dovecot_killed_and_restarted_under_an_idling_listener_loses_nothing(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    listener = manage("listen_mail")
    dovecot.append(price_email(subject="before"))
    wait_until(lambda: _count() == 1, 20, "first message")
    dovecot.close()
    dovecot.server.kill()
    # Delivered while the server is down: only a catch-up after reconnect can find it.
    dovecot.server.deliver(dovecot.user, price_email(subject="while down"))
    listener.wait_for_log(mailbox_line("prices", "; retry 1 in"), 20)
    dovecot.server.restart()
    wait_until(lambda: _count() == 2, 30, "message delivered while down", on_timeout=listener.log)
    listener.wait_for_log("reconnected after", 10)
    dovecot.append(price_email(subject="after"))
    wait_until(lambda: _count() == 3, 20, "message after restart")
    assert sorted(InboundMessage.objects.values_list("subject", flat=True)) == [
        "after",
        "before",
        "while down",
    ]
    assert listener.alive


def test_changed_uidvalidity_records_nothing_twice_and_new_messages_once(
    dovecot, make_mailbox, make_config, manage
):
    mailbox = make_mailbox(dovecot)
    make_config(mailbox)
    for i in range(3):
        dovecot.append(price_email(subject=f"old {i}"))
    listener = manage("listen_mail", env={"PRICEFEED_IMAP_IDLE_REFRESH": "1"})
    wait_until(lambda: _count() == 3, 20, "three messages")
    old_validity = MailboxCheckpoint.objects.get().uidvalidity
    dovecot.server.set_uidvalidity(dovecot.user, old_validity + 1000)
    # The idling listener is not told; its periodic re-SELECT notices.
    listener.wait_for_log("UIDVALIDITY changed", 20)
    wait_until(
        lambda: MailboxCheckpoint.objects.get().uidvalidity == old_validity + 1000,
        20,
        "checkpoint under the new UIDVALIDITY",
    )
    dovecot.append(price_email(subject="new"))
    wait_until(lambda: _count() == 4, 20, "new message")
    assert sorted(InboundMessage.objects.values_list("subject", flat=True)) == [
        "new",
        "old 0",
        "old 1",
        "old 2",
    ]
    assert InboundMessage.objects.get(subject="new").uidvalidity == old_validity + 1000
    assert listener.count("duplicate skipped") >= 3
