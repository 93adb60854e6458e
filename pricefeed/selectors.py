"""Reading the price domain for other apps, and for monitoring (``pricefeed_status``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Now

from core.backlog import WorkSummary, work_summary

from .imports.lifecycle import IMPORT_WORK
from .models import PriceImport, PriceListConfig
from .schedule import Period

logger = logging.getLogger(__name__)


def enabled_configs_count(mailbox: str = "") -> Subquery:
    """The number of enabled configs of a mailbox, in SQL; ``mailbox`` is the path to the
    mailbox from the queried model ("" for Mailbox itself). A mailbox's default
    balancing weight (see mailboxes.weights)."""
    prefix = f"{mailbox}__" if mailbox else ""
    return Subquery(
        PriceListConfig.objects.filter(mailbox=OuterRef(f"{prefix}pk"), enabled=True)
        .order_by()
        .values("mailbox")
        .annotate(n=Count("pk"))
        .values("n")
    )


def has_enabled_config(mailbox: str = "") -> Exists:
    """Whether a mailbox has an enabled config, in SQL (``mailbox`` as for
    ``enabled_configs_count``): until it has one, it is not listened to (see
    mailboxes.weights)."""
    prefix = f"{mailbox}__" if mailbox else ""
    return Exists(PriceListConfig.objects.filter(mailbox=OuterRef(f"{prefix}pk"), enabled=True))


def imports_summary() -> WorkSummary:
    """Price imports by status; stuck: RUNNING for longer than
    ``PRICEFEED_PROCESSING_CLAIM_TIMEOUT``, or PENDING and due (since it was created, or
    since its next attempt's time) for longer than ``PRICEFEED_REQUEUE_AFTER`` without
    a worker taking it."""
    return work_summary(
        IMPORT_WORK,
        claim_timeout=settings.PRICEFEED_PROCESSING_CLAIM_TIMEOUT,
        overdue_after=settings.PRICEFEED_REQUEUE_AFTER,
        due_since=Coalesce("next_attempt_at", "created_at"),
    )


# -- lists expected and not come (pricefeed.schedule) ------------------------------------


@dataclass(frozen=True)
class OverdueConfig:
    """A config whose expected list is overdue at ``now``: the period it was due in, and
    the latest list that did come (None: none ever)."""

    config: PriceListConfig
    period: Period
    last_arrival: datetime | None
    now: datetime


def with_last_arrival(configs: QuerySet[PriceListConfig]) -> QuerySet[PriceListConfig]:
    """``configs`` with ``last_arrival`` (when the latest import of each was made, of any
    status: a FAILED list did come) and ``checked_at`` (the database's now), in one
    query."""
    latest = (
        PriceImport.objects.filter(config=OuterRef("pk"))
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    return configs.annotate(last_arrival=Subquery(latest), checked_at=Now())


def overdue_configs(now: datetime | None = None) -> list[OverdueConfig]:
    """The enabled configs (of enabled mailboxes) whose expected list is overdue at
    ``now`` (default: the database's now), by mailbox and name; one query."""
    scheduled = PriceListConfig.objects.filter(enabled=True, mailbox__enabled=True).filter(
        Q(expected_every_hours__isnull=False) | Q(expected_by__isnull=False)
    )
    found = []
    for config in with_last_arrival(scheduled.select_related("mailbox")):
        period = overdue_period(config, now)
        if period is not None:
            found.append(
                OverdueConfig(
                    config=config,
                    period=period,
                    last_arrival=config.last_arrival,  # type: ignore[attr-defined]
                    now=now or config.checked_at,  # type: ignore[attr-defined]
                )
            )
    return found


def overdue_period(config: PriceListConfig, now: datetime | None = None) -> Period | None:
    """The period whose list ``config`` misses at ``now`` (default: ``checked_at``); the
    config comes from with_last_arrival. None when nothing is overdue, or its schedule
    cannot be read (a time zone no longer known: logged)."""
    try:
        schedule = config.schedule()
    except (KeyError, ValueError) as exc:  # ZoneInfoNotFoundError is a KeyError
        logger.error(
            "schedule unreadable config=%s error=%s",
            config.pk,
            exc,
            extra={"action": "schedule_unreadable", "config_id": config.pk},
        )
        return None
    if schedule is None:
        return None
    return schedule.missed_period(
        now=now or config.checked_at,  # type: ignore[attr-defined]
        last_arrival=config.last_arrival,  # type: ignore[attr-defined]
        since=config.created_at,
    )
