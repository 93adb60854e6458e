"""Mailbox leases and instance heartbeats: who listens where.

Every transition is one conditional UPDATE on database time; an instance's own clock
is never consulted. The token grows on every acquisition and fences writes made on
behalf of a lease (see ``fence``).
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

from django.db import OperationalError, connection, transaction
from django.db.models import BooleanField, DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Now

from core.dbtime import db_now_minus, db_now_plus
from core.pgnotify import notify_on_commit

from . import sql
from .exceptions import LeaseLost
from .models import InstanceHeartbeat, Mailbox, MailboxLease
from .rebalance import Snapshot
from .weights import listened_to, weight_expression

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lease:
    mailbox_id: int
    owner: str
    token: int


CHANNEL = "pricefeed_listeners"  # NOTIFY: mailboxes, configs or leases changed


# How long a takeover waits for the write in progress under the lease (see fence): a
# healthy owner's write takes milliseconds. One whose process is frozen holds the row
# until the server ends its session (listener_session_setup); the takeover is tried
# again on a later round meanwhile, and the supervisor goes on renewing its own leases.
ACQUIRE_LOCK_TIMEOUT_MS = 200


def lease_acquire(*, mailbox_id: int, owner: str, ttl: float) -> Lease | None:
    """Takes the lease if it is free, expired or already ours; returns it with a new token.

    One conditional UPDATE; the read of the new token is in the same transaction, under
    the row lock the UPDATE took, so it is the token this UPDATE wrote. None when the
    lease is not to be had, or when a write under it held the row past
    ACQUIRE_LOCK_TIMEOUT_MS.
    """
    leases_ensure(mailbox_ids=[mailbox_id])
    try:
        return _lease_acquire(mailbox_id, owner, ttl)
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) != "55P03":  # lock_not_available
            raise
        logger.info(
            "lease on mailbox_id=%s busy: a write under it holds the row; trying again later",
            mailbox_id,
            extra={"action": "lease_busy", "mailbox_id": mailbox_id},
        )
        return None


def _lease_acquire(mailbox_id: int, owner: str, ttl: float) -> Lease | None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql.SET_LOCK_TIMEOUT.format(milliseconds=ACQUIRE_LOCK_TIMEOUT_MS))
        taken = (
            MailboxLease.objects.filter(mailbox_id=mailbox_id)
            .filter(
                Q(owner="")
                | Q(expires_at__lt=Now())
                | Q(expires_at=None)
                | Q(owner=owner, release_requested=False)
            )
            .update(
                owner=owner,
                token=F("token") + 1,
                acquired_at=Now(),
                renewed_at=Now(),
                expires_at=db_now_plus(ttl),
                release_requested=False,
            )
        )
        if not taken:
            return None
        token = (
            MailboxLease.objects.filter(mailbox_id=mailbox_id).values_list("token", flat=True).get()
        )
    logger.info(
        "lease acquired mailbox_id=%s token=%s",
        mailbox_id,
        token,
        extra={"action": "lease_acquired", "mailbox_id": mailbox_id},
    )
    return Lease(mailbox_id, owner, token)


def listener_session_setup(*, connection, ttl: float, **kwargs) -> None:
    """For listen_mail's database sessions (a connection_created receiver): the server
    ends a session left idle inside a transaction for a lease's TTL. A listener frozen
    mid-write (a stopped process, a paused VM) would otherwise hold its lease row, and
    keep every other instance from taking the mailbox over, for as long as it is frozen;
    a healthy listener never idles that long within a write."""
    with connection.cursor() as cursor:
        cursor.execute(sql.SET_IDLE_IN_TRANSACTION_TIMEOUT.format(milliseconds=int(ttl * 1000)))


def leases_ensure(*, mailbox_ids: list[int]) -> None:
    """Creates the missing lease rows, free since now."""
    existing = set(
        MailboxLease.objects.filter(mailbox_id__in=mailbox_ids).values_list("mailbox_id", flat=True)
    )
    missing = [m for m in mailbox_ids if m not in existing]
    if missing:
        MailboxLease.objects.bulk_create(
            [MailboxLease(mailbox_id=m, expires_at=Now()) for m in missing],
            ignore_conflicts=True,
        )


def leases_renew(*, leases: list[Lease], owner: str, ttl: float) -> set[int]:
    """Extends the unexpired leases we hold with the same token, unless an operator asked
    for their release; returns the mailbox ids still ours."""
    if not leases:
        return set()
    held = Q()
    for lease in leases:
        held |= Q(mailbox_id=lease.mailbox_id, token=lease.token)
    with transaction.atomic():
        MailboxLease.objects.filter(held, owner=owner, expires_at__gt=Now()).filter(
            release_requested=False
        ).update(renewed_at=Now(), expires_at=db_now_plus(ttl))
        kept = set(
            MailboxLease.objects.filter(
                held, owner=owner, expires_at__gt=Now(), release_requested=False
            ).values_list("mailbox_id", flat=True)
        )
    return kept


def lease_release(*, lease: Lease) -> bool:
    """Frees a lease we hold (same owner and token), free from now on; peers hear of it."""
    released = MailboxLease.objects.filter(
        mailbox_id=lease.mailbox_id, owner=lease.owner, token=lease.token
    ).update(owner="", expires_at=Now(), release_requested=False)
    if released:
        notify_on_commit(CHANNEL, "lease")
        logger.info(
            "lease released mailbox_id=%s token=%s",
            lease.mailbox_id,
            lease.token,
            extra={"action": "lease_released", "mailbox_id": lease.mailbox_id},
        )
    return bool(released)


def leases_request_release(*, mailbox_ids: list[int]) -> int:
    """Asks the owners to let go (admin "force release"): the owner's next renewal fails,
    it stops listening and frees the lease at once. Nobody else takes it before that or
    before it expires, so there is never a moment with two listeners."""
    return (
        MailboxLease.objects.filter(mailbox_id__in=mailbox_ids)
        .exclude(owner="")
        .update(release_requested=True)
    )


def fence(lease: Lease) -> None:
    """Inside a transaction: locks the lease row and raises LeaseLost unless it is still
    ours, unexpired, with the same token. A takeover waits for our commit, so what we
    write under the lock was written by the owner."""
    held = list(
        MailboxLease.objects.select_for_update(no_key=True)
        .filter(
            mailbox_id=lease.mailbox_id,
            owner=lease.owner,
            token=lease.token,
            expires_at__gt=Now(),
        )
        .values_list("pk", flat=True)
    )
    if not held:
        now = (
            MailboxLease.objects.filter(mailbox_id=lease.mailbox_id)
            .values_list("owner", "token")
            .first()
        )
        owner, token = now or ("", "?")
        logger.warning(
            "write rejected: lease on mailbox_id=%s token=%s is gone (now owner=%r token=%s)",
            lease.mailbox_id,
            lease.token,
            owner,
            token,
            extra={"action": "fenced_write_rejected", "mailbox_id": lease.mailbox_id},
        )
        raise LeaseLost(f"lease on mailbox {lease.mailbox_id} (token {lease.token}) is gone")


def instance_started(*, instance_id: str) -> None:
    """Records this process as the running instance ``instance_id``: an instance
    restarted under the same id takes its row over with this host, pid and start time
    (its lease tokens and checkpoints are where the rest of its state lives)."""
    InstanceHeartbeat.objects.update_or_create(
        instance_id=instance_id,
        defaults={
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": Now(),
            "last_seen": Now(),
            "stopping": False,
        },
    )


def heartbeat(*, instance_id: str, stopping: bool = False) -> None:
    updated = InstanceHeartbeat.objects.filter(instance_id=instance_id).update(
        last_seen=Now(), stopping=stopping
    )
    if not updated:
        InstanceHeartbeat.objects.update_or_create(
            instance_id=instance_id,
            defaults={"host": socket.gethostname(), "pid": os.getpid(), "stopping": stopping},
        )


def heartbeats_prune(*, older_than: float) -> int:
    """Forgets instances not seen for ``older_than`` seconds (admin shows them as dead
    until then)."""
    deleted, _ = InstanceHeartbeat.objects.filter(last_seen__lt=db_now_minus(older_than)).delete()
    return deleted


def snapshot(*, me: str, live_within: float) -> Snapshot:
    """What rebalancing decides from, read from the database on database time: live
    instances (a heartbeat within ``live_within`` seconds), the mailboxes to listen to
    (``weights.listened_to``) with their weights, who holds what, how long the free ones
    have been free."""
    live = set(
        InstanceHeartbeat.objects.filter(
            last_seen__gt=db_now_minus(live_within), stopping=False
        ).values_list("instance_id", flat=True)
    )
    live.add(me)
    weights = dict(
        Mailbox.objects.filter(listened_to()).annotate(w=weight_expression()).values_list("pk", "w")
    )
    leases_ensure(mailbox_ids=list(weights))
    owners: dict[int, str] = {}
    free_for: dict[int, float] = {}
    rows = MailboxLease.objects.filter(mailbox_id__in=list(weights)).annotate(
        held=ExpressionWrapper(Q(expires_at__gt=Now()) & ~Q(owner=""), BooleanField()),
        free_since=ExpressionWrapper(Now() - F("expires_at"), DurationField()),
    )
    for mailbox_id, owner, held, free_since in rows.values_list(
        "mailbox_id", "owner", "held", "free_since"
    ):
        if held:
            owners[mailbox_id] = owner
        else:
            free_for[mailbox_id] = free_since.total_seconds() if free_since else float("inf")
    return Snapshot(me=me, live=frozenset(live), weights=weights, owners=owners, free_for=free_for)
