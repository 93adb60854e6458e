"""mailboxes.leases: who listens to a mailbox, with a fencing token."""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from mailboxes.exceptions import LeaseLost
from mailboxes.leases import (
    Lease,
    fence,
    lease_acquire,
    lease_release,
    leases_renew,
    listener_session_setup,
)
from mailboxes.models import Mailbox, MailboxLease
from tests.factories import create_mailbox

pytestmark = pytest.mark.django_db

TTL = 30.0


def expire(mailbox_id: int) -> None:
    MailboxLease.objects.filter(mailbox_id=mailbox_id).update(
        expires_at=timezone.now() - timedelta(minutes=5)
    )


@pytest.fixture
def other_mailbox(db) -> Mailbox:
    return create_mailbox(name="Второй")


def test_free_lease_is_acquired_with_token_1(mailbox):
    lease = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    assert lease == Lease(mailbox.pk, "a", 1)
    row = MailboxLease.objects.get(mailbox=mailbox)
    assert row.owner == "a"
    assert row.expires_at > timezone.now()


def test_second_owner_gets_nothing_while_the_lease_is_unexpired(mailbox):
    lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    assert lease_acquire(mailbox_id=mailbox.pk, owner="b", ttl=TTL) is None
    row = MailboxLease.objects.get(mailbox=mailbox)
    assert (row.owner, row.token) == ("a", 1)


def test_same_owner_reacquiring_gets_the_next_token(mailbox):
    first = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    second = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    assert second == Lease(mailbox.pk, "a", first.token + 1)


def test_expired_lease_is_taken_over_with_a_higher_token(mailbox):
    first = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    expire(mailbox.pk)

    taken = lease_acquire(mailbox_id=mailbox.pk, owner="b", ttl=TTL)

    assert taken is not None
    assert taken.owner == "b"
    assert taken.token > first.token
    assert MailboxLease.objects.get(mailbox=mailbox).owner == "b"


def test_released_lease_is_free_for_another_owner(mailbox):
    first = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    assert lease_release(lease=first)

    taken = lease_acquire(mailbox_id=mailbox.pk, owner="b", ttl=TTL)

    assert taken == Lease(mailbox.pk, "b", 2)


def test_renew_keeps_only_leases_whose_token_still_matches(mailbox, other_mailbox):
    stale = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)  # token moves on
    current = lease_acquire(mailbox_id=other_mailbox.pk, owner="a", ttl=TTL)

    kept = leases_renew(leases=[stale, current], owner="a", ttl=TTL)

    assert kept == {other_mailbox.pk}


def test_renew_drops_a_lease_taken_over_by_another_owner(mailbox):
    ours = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    expire(mailbox.pk)
    lease_acquire(mailbox_id=mailbox.pk, owner="b", ttl=TTL)

    assert leases_renew(leases=[ours], owner="a", ttl=TTL) == set()
    assert MailboxLease.objects.get(mailbox=mailbox).owner == "b"


def test_renew_drops_an_expired_lease_and_does_not_revive_it(mailbox):
    ours = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    expire(mailbox.pk)

    assert leases_renew(leases=[ours], owner="a", ttl=TTL) == set()
    assert MailboxLease.objects.get(mailbox=mailbox).expires_at < timezone.now()


def test_renew_extends_the_expiry_of_a_held_lease(mailbox):
    ours = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=5)
    before = MailboxLease.objects.get(mailbox=mailbox).expires_at

    assert leases_renew(leases=[ours], owner="a", ttl=600) == {mailbox.pk}
    assert MailboxLease.objects.get(mailbox=mailbox).expires_at > before


def test_renew_of_nothing_is_nothing():
    assert leases_renew(leases=[], owner="a", ttl=TTL) == set()


def test_release_with_the_right_owner_and_token_frees_the_lease(mailbox):
    lease = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    assert lease_release(lease=lease) is True

    row = MailboxLease.objects.get(mailbox=mailbox)
    assert row.owner == ""
    assert row.expires_at <= timezone.now()  # free since the release


def test_release_with_a_stale_token_does_nothing(mailbox):
    stale = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    assert lease_release(lease=stale) is False
    assert MailboxLease.objects.get(mailbox=mailbox).owner == "a"


def test_release_by_another_owner_does_nothing(mailbox):
    lease = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    assert lease_release(lease=Lease(mailbox.pk, "b", lease.token)) is False
    assert MailboxLease.objects.get(mailbox=mailbox).owner == "a"


def test_fence_passes_for_the_current_lease(mailbox):
    lease = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    with transaction.atomic():
        fence(lease)


def test_fence_raises_lease_lost_for_a_stale_token(mailbox):
    stale = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)

    with pytest.raises(LeaseLost, match=f"token {stale.token}"):
        with transaction.atomic():
            fence(stale)


def test_fence_raises_lease_lost_for_an_expired_lease(mailbox):
    lease = lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=TTL)
    expire(mailbox.pk)

    with pytest.raises(LeaseLost):
        with transaction.atomic():
            fence(lease)


def _raw_connection():
    import psycopg

    from tests.integration.support import database_url

    return psycopg.connect(database_url().replace("postgres://", "postgresql://", 1))


@pytest.mark.django_db(transaction=True)
def test_a_takeover_does_not_wait_for_a_writer_frozen_under_the_lease(mailbox):
    # "b" was frozen (SIGSTOP) inside a fenced write: its transaction holds the row.
    lease_acquire(mailbox_id=mailbox.pk, owner="b", ttl=TTL)
    expire(mailbox.pk)
    frozen = _raw_connection()
    frozen.execute(
        "SELECT 1 FROM mailboxes_mailboxlease WHERE mailbox_id = %s FOR NO KEY UPDATE",
        [mailbox.pk],
    )
    result: list = []

    def take_over() -> None:
        try:
            result.append(lease_acquire(mailbox_id=mailbox.pk, owner="c", ttl=TTL))
        finally:
            connection.close()  # this thread's own

    attempt = threading.Thread(target=take_over)
    try:
        attempt.start()
        attempt.join(30)  # a liveness bound, not a timing: without lock_timeout it hangs
        assert not attempt.is_alive()
        assert result == [None]  # not now: the supervisor goes on with its other work
    finally:
        frozen.rollback()  # the server ends the frozen session (see the next test)
        frozen.close()
    assert lease_acquire(mailbox_id=mailbox.pk, owner="c", ttl=TTL) == Lease(mailbox.pk, "c", 2)


@pytest.mark.django_db(transaction=True)
def test_listener_sessions_left_idle_in_a_transaction_are_ended_by_the_server():
    raw = _raw_connection()
    try:
        raw.autocommit = True  # as Django's connections are
        listener_session_setup(connection=_AsDjango(raw), ttl=0.3)
        raw.execute("BEGIN")
        raw.execute("SELECT 1")
        time.sleep(1.5)  # idle inside the transaction, as a frozen listener would be
        with pytest.raises(psycopg.Error, match="idle-in-transaction timeout"):
            raw.execute("SELECT 1")
    finally:
        raw.close()
    listener_session_setup(connection=connection, ttl=10)
    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        assert cursor.fetchone()[0] == "10s"


class _AsDjango:
    """A psycopg connection seen as listener_session_setup sees a Django one."""

    def __init__(self, raw) -> None:
        self.raw = raw

    def cursor(self):
        return contextlib.closing(self.raw.cursor())
