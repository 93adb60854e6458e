"""Alerts for price lists that did not come on time.

A periodic sweep (registered in PricefeedConfig.ready, run by every ``listen_mail``
supervisor) finds the overdue configs (selectors.overdue_configs, on the database's
time) and raises one OverdueAlert per config and period: the row, unique per (config,
period start), and its outbox event are written in one transaction, so an alert is
published once however many instances check at the same moment (the second insert
waits for the first and finds its row). The notifications app turns the event into
mails to the config's subscribers.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from outbox.services import publish

from .models import OverdueAlert
from .selectors import overdue_configs

logger = logging.getLogger(__name__)

LIST_OVERDUE_EVENT = "pricefeed.list_overdue"


def overdue_alerts_raise(*, now: datetime | None = None) -> list[OverdueAlert]:
    """Raises an alert for each overdue config whose period has none yet and publishes
    it; returns the alerts raised by this call (none for periods already alerted)."""
    raised = []
    for overdue in overdue_configs(now):
        with transaction.atomic():
            alert, created = OverdueAlert.objects.get_or_create(
                config=overdue.config,
                period_start=overdue.period.start,
                defaults={"due_at": overdue.period.due, "last_arrival": overdue.last_arrival},
            )
            if not created:
                continue
            publish(LIST_OVERDUE_EVENT, alert, {"alert_id": alert.pk})
        logger.warning(
            "price list overdue config=%s due_at=%s alert=%s",
            overdue.config.pk,
            overdue.period.due.isoformat(),
            alert.pk,
            extra={"action": "list_overdue", "config_id": overdue.config.pk},
        )
        raised.append(alert)
    return raised


def overdue_sweep() -> None:
    """The sweep: alerts for the lists overdue now."""
    overdue_alerts_raise()
