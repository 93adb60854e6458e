"""The kind of notification that says a price list did not come on time.

An overdue-list alert (pricefeed.overdue) fans out into notifications of this kind, one
per recipient and alert, and one send event each, in one transaction, as an import
outcome does (services.fan_out). The recipients are the enabled subscriptions that want
overdue lists (``on_overdue``) for the config (or for every config), at their own
address: "reply to the sender" has no sender here. Each mail is in its subscription's
language, says when the list was due in the config's zone and when the last one came,
and links to the config in the admin (PRICEFEED_PUBLIC_URL).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import formats
from django.utils import timezone as dj_timezone
from django.utils.translation import gettext_lazy

from pricefeed.models import OverdueAlert

from . import content, services
from .kinds import Kind, register


def _when(moment: datetime | None, zone) -> str:
    if moment is None:
        return ""
    return formats.date_format(dj_timezone.localtime(moment, zone), "DATETIME_FORMAT")


def _overdue_mail(alerts: Sequence[OverdueAlert]) -> tuple[str, dict]:
    """The alert, its config and mailbox, what the config expects, when the list was
    due and when the last one came (in the config's zone, which the mail names), and
    the link to the config."""
    (alert,) = alerts
    config = alert.config
    schedule = config.schedule()
    zone = schedule.zone if schedule is not None else dj_timezone.get_default_timezone()
    return "notifications/list_overdue", {
        "alert": alert,
        "config": config,
        "mailbox": config.mailbox,
        "expected": config.expected_display(),
        "due": _when(alert.due_at, zone),
        "zone": str(zone),
        "last_arrival": _when(alert.last_arrival, zone),
        "link": content.config_admin_url(config),
    }


LIST_OVERDUE = register(
    Kind(
        name="list_overdue",
        label=gettext_lazy("list overdue"),
        subject="alert",
        subjects=lambda: OverdueAlert.objects.select_related("config__mailbox"),
        subscription_flag="on_overdue",
        mail=_overdue_mail,
        send_event="notification.overdue.send",
        message_id_prefix="pricefeed.overdue",
    )
)
SEND_EVENT = LIST_OVERDUE.send_event


def overdue_fan_out(*, alert_id: int) -> int:
    """The notifications of an alert and their send events (services.fan_out)."""
    alert = OverdueAlert.objects.get(pk=alert_id)
    return services.fan_out(LIST_OVERDUE, [(alert, "")])
