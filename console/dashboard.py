"""The admin's front page for one user: a tile per kind of row they may see, counts by
state linked to the change list that shows those rows, and the charts.

What stands now (the outbox, listeners, leases) comes from the apps' selectors, as
``pricefeed_status`` has it; counts over time from ``console.selectors``. A tile, and
its queries, exist only for a user who may view its model: a page view costs a fixed
number of aggregate queries, however many rows there are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Model
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.formats import get_format, localize
from django.utils.translation import gettext, ngettext, pgettext

from delivery import selectors as delivery_selectors
from delivery.models import Delivery
from mailboxes import selectors as mailboxes_selectors
from mailboxes.models import InboundMessage, InstanceHeartbeat, Mailbox, MailboxLease
from notifications.models import Notification
from outbox import selectors as outbox_selectors
from outbox.models import OutboxEvent
from pricefeed.filters import IN_PROGRESS
from pricefeed.models import PriceImport, PriceListConfig
from pricefeed.selectors import overdue_configs
from pricing import selectors as pricing_selectors
from pricing.models import Offer, ProductPrice

from . import charts, selectors
from .charts import Chart, Series, Slot

# The permission each part needs ("<app>.view_<model>", as User.has_perm names it).
VIEW_MESSAGES = "mailboxes.view_inboundmessage"
VIEW_IMPORTS = "pricefeed.view_priceimport"
VIEW_NOTIFICATIONS = "notifications.view_notification"
VIEW_OUTBOX = "outbox.view_outboxevent"
VIEW_INSTANCES = "mailboxes.view_instanceheartbeat"
VIEW_LEASES = "mailboxes.view_mailboxlease"
VIEW_MAILBOXES = "mailboxes.view_mailbox"
VIEW_CONFIGS = "pricefeed.view_pricelistconfig"
VIEW_PRICES = "pricing.view_productprice"
VIEW_DELIVERIES = "delivery.view_delivery"

# Unheld mailboxes named on the tile itself; the link shows them all.
NAMES_SHOWN = 5


@dataclass(frozen=True)
class Cell:
    value: int | str
    url: str = ""  # the change list of exactly these rows; "" when there is none
    alarm: bool = False  # trouble: drawn in red while it is not 0


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    cells: list[Cell]


@dataclass(frozen=True)
class Column:
    label: str
    hint: str  # the hover text: since when it counts


@dataclass(frozen=True)
class Tile:
    key: str
    title: str
    url: str  # the whole change list
    rows: list[Row]
    columns: list[Column] = field(default_factory=list)  # none: one value per row
    notes: list[tuple[str, str]] = field(default_factory=list)  # (text, url)

    def cell(self, row: str, column: int = 0) -> Cell:
        return next(r for r in self.rows if r.key == row).cells[column]


@dataclass(frozen=True)
class Dashboard:
    tiles: list[Tile]
    charts: list[Chart]
    zone: str  # the time zone the hours are cut and shown in

    def tile(self, key: str) -> Tile | None:
        return next((t for t in self.tiles if t.key == key), None)


def dashboard_build(user: Any, *, now: datetime | None = None) -> Dashboard:
    """The front page as ``user`` may see it."""
    windows = selectors.windows(now)
    columns = [
        Column(gettext("24 h"), _since(windows.day_since)),
        Column(gettext("7 days"), _since(windows.week_since)),
    ]
    tiles: list[Tile] = []
    shown: list[Chart] = []
    if user.has_perm(VIEW_MESSAGES):
        by_hour = selectors.messages_by_hour(windows.week_since)
        tiles.append(_messages_tile(by_hour, windows, columns))
        shown.append(_messages_chart(by_hour, windows))
    if user.has_perm(VIEW_IMPORTS):
        by_hour = selectors.imports_by_hour(windows.week_since)
        tiles.append(_imports_tile(by_hour, windows, columns))
        shown.append(_imports_chart(by_hour, windows))
        if user.has_perm(VIEW_MESSAGES):
            shown.append(_latency_chart(windows))
    if user.has_perm(VIEW_NOTIFICATIONS):
        tiles.append(_notifications_tile(windows, columns))
    if user.has_perm(VIEW_OUTBOX):
        tiles.append(_outbox_tile())
    if user.has_perm(VIEW_CONFIGS):
        tiles.append(_overdue_tile(now))
    if user.has_perm(VIEW_PRICES) or user.has_perm(VIEW_DELIVERIES):
        tiles.append(_prices_tile(user))
    listeners = _listeners_tile(user)
    if listeners is not None:
        tiles.append(listeners)
    return Dashboard(
        tiles=tiles,
        charts=shown,
        zone=timezone.get_current_timezone_name(),
    )


# -- tiles -----------------------------------------------------------------------------------


def _changelist(model: type[Model], params: Mapping[str, object] | None = None) -> str:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    return f"{url}?{urlencode(params, doseq=True)}" if params else url


def _iso(moment: datetime) -> str:
    # The lists' "since" filter (core.adminutils.SinceFilter) takes an ISO time with
    # its offset: the hour a window's counts begin.
    return moment.isoformat()


def _windowed_rows(
    model: type[Model],
    *,
    status_param: str = "status__exact",
    labels: Sequence[tuple[str, str, str | None, bool]],
    counts: Sequence[Mapping[str, int]],
    since: Sequence[datetime],
) -> list[Row]:
    """A row per (key, label, status or None for all, alarm), a cell per window."""
    return [
        Row(
            key=key,
            label=label,
            cells=[
                Cell(
                    value=found[key],
                    url=_changelist(
                        model,
                        {"since": _iso(start)} | ({status_param: status} if status else {}),
                    ),
                    alarm=alarm,
                )
                for found, start in zip(counts, since, strict=True)
            ],
        )
        for key, label, status, alarm in labels
    ]


def _messages_tile(
    by_hour: Mapping[datetime, Mapping[str, int]], windows: selectors.Windows, columns: list[Column]
) -> Tile:
    names = list(selectors.MESSAGE_COUNTS)
    since = [windows.day_since, windows.week_since]
    counts = [selectors.totals(by_hour, since=start, names=names) for start in since]
    Msg = InboundMessage.Status
    return Tile(
        key="messages",
        title=gettext("Inbound messages"),
        url=_changelist(InboundMessage),
        columns=columns,
        rows=_windowed_rows(
            InboundMessage,
            labels=[
                ("received", gettext("Received"), None, False),
                ("ignored", gettext("Ignored (no config matched)"), Msg.IGNORED, False),
                ("retrying", gettext("Retrying"), Msg.RETRYABLE, True),
                ("failed", gettext("Failed"), Msg.FAILED, True),
                ("rejected", gettext("Rejected"), Msg.REJECTED, True),
            ],
            counts=counts,
            since=since,
        ),
    )


def _imports_tile(
    by_hour: Mapping[datetime, Mapping[str, int]], windows: selectors.Windows, columns: list[Column]
) -> Tile:
    names = list(selectors.IMPORT_COUNTS)
    since = [windows.day_since, windows.week_since]
    counts = [selectors.totals(by_hour, since=start, names=names) for start in since]
    Imp = PriceImport.Status
    rows = _windowed_rows(
        PriceImport,
        status_param="status",  # pricefeed.filters.ImportStatusFilter
        labels=[
            ("succeeded", gettext("Succeeded"), Imp.SUCCEEDED, False),
            ("partial", gettext("Partial"), Imp.PARTIAL, True),
            ("failed", gettext("Failed"), Imp.FAILED, True),
        ],
        counts=counts,
        since=since,
    )
    rows.append(
        Row(
            key="in_progress",
            label=gettext("In progress"),
            cells=[
                Cell(
                    value=found["in_progress"],
                    url=_changelist(PriceImport, {"since": _iso(start), "status": IN_PROGRESS}),
                )
                for found, start in zip(counts, since, strict=True)
            ],
        )
    )
    rows.append(
        Row(
            key="held",
            label=pgettext("imports", "Held for review"),
            cells=[
                Cell(
                    value=found["held"],
                    url=_changelist(
                        PriceImport,
                        {"since": _iso(start), "review__exact": PriceImport.Review.HELD},
                    ),
                    alarm=True,
                )
                for found, start in zip(counts, since, strict=True)
            ],
        )
    )
    return Tile(
        key="imports",
        title=gettext("Price imports"),
        url=_changelist(PriceImport),
        columns=columns,
        rows=rows,
    )


def _notifications_tile(windows: selectors.Windows, columns: list[Column]) -> Tile:
    found = selectors.notifications_in_windows(
        {"day": windows.day_since, "week": windows.week_since}
    )
    Note = Notification.Status
    return Tile(
        key="notifications",
        title=gettext("Notifications"),
        url=_changelist(Notification),
        columns=columns,
        rows=_windowed_rows(
            Notification,
            labels=[
                ("pending", gettext("Pending"), Note.PENDING, False),
                ("failed", gettext("Failed"), Note.FAILED, True),
            ],
            counts=[found["day"], found["week"]],
            since=[windows.day_since, windows.week_since],
        ),
    )


def _outbox_tile() -> Tile:
    summary = outbox_selectors.events_summary()
    age = summary.oldest_due_age
    return Tile(
        key="outbox",
        title=gettext("Outbox"),
        url=_changelist(OutboxEvent),
        rows=[
            Row(
                "due",
                gettext("Due now"),
                [Cell(summary.due, _changelist(OutboxEvent, {"waiting": "due"}))],
            ),
            Row(
                "oldest_due",
                gettext("Oldest due for"),
                [
                    Cell(
                        "—" if age is None else charts.format_duration(age),
                        alarm=summary.stuck_waiting > 0,
                    )
                ],
            ),
            Row(
                "backing_off",
                gettext("Backing off"),
                [
                    Cell(
                        summary.backlog - summary.due,
                        _changelist(OutboxEvent, {"waiting": "backing_off"}),
                    )
                ],
            ),
            Row(
                "stuck",
                gettext("Stuck"),
                [Cell(summary.stuck, _changelist(OutboxEvent, {"waiting": "stuck"}), alarm=True)],
            ),
            Row(
                "failed",
                gettext("Failed (given up)"),
                [
                    Cell(
                        summary.failed,
                        _changelist(OutboxEvent, {"status__exact": OutboxEvent.Status.FAILED}),
                        alarm=True,
                    )
                ],
            ),
        ],
    )


def _prices_tile(user: Any) -> Tile:
    """Our prices: those waiting for approval, the offers waiting for a rate, and the
    deliveries of the changes that fail (each row for whoever may see its list)."""
    rows: list[Row] = []
    if user.has_perm(VIEW_PRICES):
        rows += _prices_rows(pricing_selectors.prices_summary())
    if user.has_perm(VIEW_DELIVERIES):
        rows.append(
            Row(
                "failing_deliveries",
                gettext("Deliveries failing"),
                [
                    Cell(
                        delivery_selectors.failing_count(),
                        _changelist(Delivery, {"failing": "1"}),
                        alarm=True,
                    )
                ],
            )
        )
    return Tile(
        key="prices",
        title=gettext("Our prices"),
        url=_changelist(ProductPrice) if user.has_perm(VIEW_PRICES) else _changelist(Delivery),
        rows=rows,
    )


def _prices_rows(summary: pricing_selectors.PricesSummary) -> list[Row]:
    return [
        Row(
            "held",
            gettext("Held for approval"),
            [
                Cell(
                    summary.held,
                    _changelist(ProductPrice, {"status__exact": ProductPrice.Status.HELD}),
                    alarm=True,
                )
            ],
        ),
        Row(
            "no_rate",
            ngettext(
                "Offers without a rate (%(count)s currency)",
                "Offers without a rate (%(count)s currencies)",
                summary.no_rate_currencies,
            )
            % {"count": summary.no_rate_currencies},
            [
                Cell(
                    summary.no_rate_offers,
                    _changelist(Offer, {"status__exact": Offer.Status.NO_RATE}),
                    alarm=True,
                )
            ],
        ),
    ]


def _listeners_tile(user: Any) -> Tile | None:
    rows: list[Row] = []
    notes: list[tuple[str, str]] = []
    url = ""
    if user.has_perm(VIEW_INSTANCES):
        url = _changelist(InstanceHeartbeat)
        states = [i.state for i in mailboxes_selectors.instances_overview()]
        labels = {
            "live": gettext("Live instances"),
            "dead": gettext("Dead instances"),
            "stopped": gettext("Stopped instances"),
        }
        rows += [
            Row(
                state,
                labels[state],
                [
                    Cell(
                        states.count(state),
                        _changelist(InstanceHeartbeat, {"state": state}),
                        alarm=state == "dead",
                    )
                ],
            )
            for state in ("live", "dead", "stopped")
        ]
    if user.has_perm(VIEW_LEASES):
        leases = mailboxes_selectors.leases_overview()
        held = sum(lease.state in ("held", "release requested") for lease in leases)
        url = url or _changelist(MailboxLease)
        held_url = _changelist(MailboxLease, {"state": "held"})
        rows.append(Row("leases_held", gettext("Leases held"), [Cell(held, held_url)]))
    if user.has_perm(VIEW_MAILBOXES):
        unheld = mailboxes_selectors.mailboxes_unlistened()
        ids = (
            dict(Mailbox.objects.filter(name__in=unheld).values_list("name", "pk"))
            if unheld
            else {}
        )
        unheld_url = _changelist(Mailbox, {"listened": "no"}) if unheld else ""
        url = url or _changelist(Mailbox)
        rows.append(
            Row(
                "unheld",
                gettext("Enabled mailboxes nobody listens to"),
                [Cell(len(unheld), unheld_url, True)],
            )
        )
        for name in unheld[:NAMES_SHOWN]:
            if name in ids:
                notes.append((name, reverse("admin:mailboxes_mailbox_change", args=[ids[name]])))
        if len(unheld) > NAMES_SHOWN:
            more = len(unheld) - NAMES_SHOWN
            notes.append(
                (ngettext("and %(n)d more", "and %(n)d more", more) % {"n": more}, unheld_url)
            )
    if not rows:
        return None
    return Tile(key="listeners", title=gettext("Listeners"), url=url, rows=rows, notes=notes)


def _overdue_tile(now: datetime | None) -> Tile:
    """The configs whose expected list has not come (pricefeed.schedule), on the
    database's time: how many, and the first few, each for how long, linked to it."""
    found = overdue_configs(now)
    url = _changelist(PriceListConfig, {"overdue": "yes"})
    rows = [Row("overdue", gettext("Overdue now"), [Cell(len(found), url, alarm=True)])]
    for overdue in found[:NAMES_SHOWN]:
        config = overdue.config
        late = charts.format_duration((overdue.now - overdue.period.due).total_seconds())
        rows.append(
            Row(
                f"config-{config.pk}",
                config.name,
                [
                    Cell(
                        gettext("late by %(duration)s") % {"duration": late},
                        reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk]),
                        alarm=True,
                    )
                ],
            )
        )
    notes = []
    if len(found) > NAMES_SHOWN:
        more = len(found) - NAMES_SHOWN
        notes.append((ngettext("and %(n)d more", "and %(n)d more", more) % {"n": more}, url))
    return Tile(
        key="overdue",
        title=gettext("Price lists that did not come on time"),
        url=url,
        rows=rows,
        notes=notes,
    )


# -- charts ----------------------------------------------------------------------------------


def _slots(
    hours: Sequence[datetime], values: Mapping[datetime, Mapping[str, float | None]]
) -> list[Slot]:
    slots = []
    for start in hours:
        local = timezone.localtime(start)
        end = timezone.localtime(start + timedelta(hours=1))
        day = date_format(local, get_format("MONTH_DAY_FORMAT"))
        slots.append(
            Slot(
                label=date_format(local, "H:i"),
                title=gettext("%(day)s, %(start)s–%(end)s")
                % {"day": day, "start": date_format(local, "H:i"), "end": date_format(end, "H:i")},
                values=values.get(start, {}),
            )
        )
    return slots


def _messages_chart(
    by_hour: Mapping[datetime, Mapping[str, int]], windows: selectors.Windows
) -> Chart:
    values = {}
    for hour in windows.day_hours:
        found = by_hour.get(hour, {})
        trouble = sum(found.get(k, 0) for k in ("retrying", "failed", "rejected"))
        ignored = found.get("ignored", 0)
        values[hour] = {
            "ok": found.get("received", 0) - trouble - ignored,
            "quiet": ignored,
            "failed": trouble,
        }
    received = sum(v["ok"] + v["quiet"] + v["failed"] for v in values.values())
    trouble = sum(v["failed"] for v in values.values())
    return charts.stacked_bars(
        chart_id="chart-messages",
        title=gettext("Inbound messages per hour, last 24 h"),
        description=gettext(
            "%(received)s received, %(trouble)s of them failed, rejected or retrying."
        )
        % {"received": localize(received), "trouble": localize(trouble)},
        series=[
            Series("ok", gettext("Done or in progress")),
            Series("quiet", gettext("Ignored (no config matched)")),
            Series("failed", gettext("Failed, rejected or retrying")),
        ],
        slots=_slots(windows.day_hours, values),
    )


def _imports_chart(
    by_hour: Mapping[datetime, Mapping[str, int]], windows: selectors.Windows
) -> Chart:
    keys = {"ok": "succeeded", "partial": "partial", "failed": "failed", "quiet": "in_progress"}
    values = {
        hour: {series: by_hour.get(hour, {}).get(name, 0) for series, name in keys.items()}
        for hour in windows.day_hours
    }
    total = sum(sum(v.values()) for v in values.values())
    failed = sum(v["failed"] for v in values.values())
    partial = sum(v["partial"] for v in values.values())
    return charts.stacked_bars(
        chart_id="chart-imports",
        title=gettext("Price imports per hour, last 24 h"),
        description=gettext("%(total)s imports, %(failed)s failed, %(partial)s partial.")
        % {"total": localize(total), "failed": localize(failed), "partial": localize(partial)},
        series=[
            Series("ok", gettext("Succeeded")),
            Series("partial", gettext("Partial")),
            Series("failed", gettext("Failed")),
            Series("quiet", gettext("In progress")),
        ],
        slots=_slots(windows.day_hours, values),
    )


def _latency_chart(windows: selectors.Windows) -> Chart:
    found = selectors.arrival_to_finished_by_hour(windows.day_since)
    values: dict[datetime, dict[str, float | None]] = {
        hour: {"p50": latency.p50, "p95": latency.p95} for hour, latency in found.items()
    }
    count = sum(latency.imports for latency in found.values())
    return charts.lines(
        chart_id="chart-latency",
        title=gettext("From arrival to import finished, per hour, last 24 h"),
        description=ngettext(
            "The median and 95th percentile of %(n)d import's time from its message's "
            "arrival to its end.",
            "The median and 95th percentile of %(n)d imports' time from their message's "
            "arrival to their end.",
            count,
        )
        % {"n": count},
        series=[
            Series("p50", gettext("Median (p50)")),
            Series("p95", gettext("95th percentile (p95)")),
        ],
        slots=_slots(windows.day_hours, values),
        formatter=charts.format_duration,
    )


def _since(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return gettext("since %(when)s") % {
        "when": f"{date_format(local, get_format('MONTH_DAY_FORMAT'))} {date_format(local, 'H:i')}"
    }
