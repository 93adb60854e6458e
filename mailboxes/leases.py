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

from django.db.models import F, Q
from django.db.models.functions import Now

from pricefeed.dbtime import db_now_plus

from .exceptions import LeaseLost
from .models import InstanceHeartbeat, MailboxLease

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lease:
    mailbox_id: int
    owner: str
    token: int


def lease_acquire(*, mailbox_id: int, owner: str, ttl: float) -> Lease | None:
    """Takes the lease if it is free, expired or already ours; returns it with a new token."""
    MailboxLease.objects.get_or_create(mailbox_id=mailbox_id)
    taken = (
        MailboxLease.objects.filter(mailbox_id=mailbox_id)
        .filter(Q(owner="") | Q(owner=owner) | Q(expires_at__lt=Now()) | Q(expires_at=None))
        .update(
            owner=owner,
            token=F("token") + 1,
            acquired_at=Now(),
            renewed_at=Now(),
            expires_at=db_now_plus(ttl),
        )
    )
    if not taken:
        return None
    token = (
        MailboxLease.objects.filter(mailbox_id=mailbox_id, owner=owner)
        .values_list("token", flat=True)
        .first()
    )
    if token is None:  # taken over between the two statements: only after a full TTL
        return None
    logger.info(
        "lease acquired mailbox=%s token=%s",
        mailbox_id,
        token,
        extra={"action": "lease_acquired", "mailbox_id": mailbox_id},
    )
    return Lease(mailbox_id, owner, token)


def leases_renew(*, leases: list[Lease], owner: str, ttl: float) -> set[int]:
    """Extends the unexpired leases we hold; returns the mailbox ids still ours."""
    if not leases:
        return set()
    ids = [lease.mailbox_id for lease in leases]
    MailboxLease.objects.filter(mailbox_id__in=ids, owner=owner, expires_at__gt=Now()).update(
        renewed_at=Now(), expires_at=db_now_plus(ttl)
    )
    current = dict(
        MailboxLease.objects.filter(
            mailbox_id__in=ids, owner=owner, expires_at__gt=Now()
        ).values_list("mailbox_id", "token")
    )
    return {lease.mailbox_id for lease in leases if current.get(lease.mailbox_id) == lease.token}


def lease_release(*, lease: Lease) -> bool:
    released = MailboxLease.objects.filter(
        mailbox_id=lease.mailbox_id, owner=lease.owner, token=lease.token
    ).update(owner="", expires_at=None)
    if released:
        logger.info(
            "lease released mailbox=%s token=%s",
            lease.mailbox_id,
            lease.token,
            extra={"action": "lease_released", "mailbox_id": lease.mailbox_id},
        )
    return bool(released)


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
        raise LeaseLost(f"lease on mailbox {lease.mailbox_id} (token {lease.token}) is gone")


def heartbeat(*, instance_id: str, stopping: bool = False) -> None:
    updated = InstanceHeartbeat.objects.filter(instance_id=instance_id).update(
        last_seen=Now(), stopping=stopping
    )
    if not updated:
        InstanceHeartbeat.objects.update_or_create(
            instance_id=instance_id,
            defaults={"host": socket.gethostname(), "pid": os.getpid(), "stopping": stopping},
        )
