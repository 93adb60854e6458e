"""Small helpers for the apps' admin classes: how every list shows a time, a long text
and a duration, and what every list of audit records shares (its stylesheet, no
Delete but for superusers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import BadRequest
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.formats import number_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import capfirst
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

# The stylesheet of the lists (column widths, one-line cells), in static files.
LIST_CSS = "pricefeed/admin/lists.css"
# Cell widths: short names and addresses, subjects and file names, errors.
WIDTHS = ("s", "m", "l")
# A tooltip holds the whole text up to this many characters.
TITLE_LIMIT = 2000
EMPTY = "—"


def annotated(obj: object, name: str) -> Any:
    """A value that ``get_queryset()`` annotated a row with: the model does not declare
    it, so type checkers cannot see it."""
    return getattr(obj, name)


def age(value: datetime, *, now: datetime | None = None) -> str:
    """How long ago ``value`` was ("3 minutes ago"), or how soon it comes ("in 5
    minutes"), in the largest unit only and in the active language."""
    now = now or timezone.now()
    seconds = (now - value).total_seconds()
    if abs(seconds) < 60:
        return gettext("just now") if seconds >= 0 else gettext("in under a minute")
    if seconds > 0:
        return gettext("%(delta)s ago") % {"delta": timesince(value, now, depth=1)}
    return gettext("in %(delta)s") % {"delta": timeuntil(value, now, depth=1)}


def absolute(value: datetime) -> str:
    """``value`` in the current time zone (TIME_ZONE), 24-hour, with seconds and the
    zone: ``2026-12-01 22:05:03 MSK (Europe/Moscow)``."""
    local = timezone.localtime(value)
    zone = timezone.get_current_timezone_name()
    abbreviation = local.tzname() or zone
    shown = abbreviation if abbreviation == zone else f"{abbreviation} ({zone})"
    return f"{date_format(local, 'Y-m-d H:i:s')} {shown}"


def when(value: datetime | None, *, now: datetime | None = None) -> SafeString | str:
    """A time as every list shows it: its age, with the absolute time and zone on hover
    (and machine-readable in ``datetime``)."""
    if value is None:
        return EMPTY
    return format_html(
        '<time class="pf-when" datetime="{}" title="{}">{}</time>',
        value.isoformat(),
        absolute(value),
        age(value, now=now),
    )


def due(value: datetime | None, *, now: datetime | None = None) -> SafeString | str:
    """When something waiting is tried next: ``in 5 minutes``; ``due now`` once its
    time came; ``overdue by 5 minutes`` when nothing has taken it up a minute after (is
    the process that should, running?). The absolute time and zone on hover."""
    if value is None:
        return EMPTY
    now = now or timezone.now()
    late = (now - value).total_seconds()
    if late < 0:
        said = age(value, now=now)
    elif late < 60:
        said = gettext("due now")
    else:
        said = gettext("overdue by %(delta)s") % {"delta": timesince(value, now, depth=1)}
    return format_html(
        '<time class="pf-when{}" datetime="{}" title="{}">{}</time>',
        " pf-error" if late >= 60 else "",
        value.isoformat(),
        absolute(value),
        said,
    )


def truncated(text: object, *, width: str = "m", error: bool = False) -> SafeString | str:
    """A text on one line of a list: cut to the column's width (``s``, ``m`` or ``l``)
    with an ellipsis, the whole of it on hover; in red when it is an error."""
    assert width in WIDTHS, width
    full = str(text or "").strip()
    if not full:
        return EMPTY
    # One line in the cell; the tooltip keeps the line breaks.
    line = " ".join(full.split())
    limit = {"s": 40, "m": 80, "l": 160}[width]
    short = line if len(line) <= limit else line[: limit - 1] + "…"
    return format_html(
        '<span class="pf-cell pf-{}{}" title="{}">{}</span>',
        width,
        " pf-error" if error else "",
        full[:TITLE_LIMIT],
        short,
    )


def label(obj: Any, field: str) -> SafeString | str:
    """A choice's label as a list shows it: up to its parenthesis ("Partial" of
    "Partial (some rows failed)") and cut to a short column, the whole label on hover."""
    full = str(getattr(obj, f"get_{field}_display")())
    short = " ".join(full.split(" (")[0].split())
    if len(short) > 16:
        short = short[:15] + "…"
    return format_html('<span class="pf-cell pf-s" title="{}">{}</span>', full, short)


def duration(value: timedelta | None) -> str:
    """How long something took: ``0.42 s``, ``12 s``, ``3 min 05 s``, ``2 h 07 min``."""
    if value is None:
        return EMPTY
    seconds = max(0.0, value.total_seconds())
    if seconds < 10:
        # In the language's own decimal separator: "0.42 s", "0,42 с".
        return gettext("%(seconds)s s") % {"seconds": number_format(seconds, 2)}
    if seconds < 60:
        return gettext("%(seconds)d s") % {"seconds": seconds}
    if seconds < 3600:
        minutes, rest = divmod(int(seconds), 60)
        return gettext("%(minutes)d min %(seconds)02d s") % {"minutes": minutes, "seconds": rest}
    hours, rest = divmod(int(seconds) // 60, 60)
    return gettext("%(hours)d h %(minutes)02d min") % {"hours": hours, "minutes": rest}


class ListAdminMixin:
    """Every list of the apps: its stylesheet (one-line cells, column widths), and its
    model's plural name as its title ("Импорты прайс-листов"), where Django's "Select %s
    to change" cannot be said in Russian without declining the name."""

    class Media:
        css = {"all": [LIST_CSS]}

    def get_changelist_instance(self, request):
        """The list, or a 400 for a filter value it cannot read (``?state=bogus``, a
        time past the calendar): Django would redirect to its "?e=1" page, which says
        the database is broken."""
        try:
            return super().get_changelist_instance(request)  # type: ignore[misc]
        except IncorrectLookupParameters as exc:
            raise BadRequest(str(exc)) from exc

    def changelist_view(self, request, extra_context=None):
        title = capfirst(self.model._meta.verbose_name_plural)  # type: ignore[attr-defined]
        return super().changelist_view(  # type: ignore[misc]
            request, {"title": title, **(extra_context or {})}
        )


class AuditAdminMixin(ListAdminMixin):
    """A list of audit records (what arrived, what was made of it, what went out, who
    runs): read-only history that only a superuser may delete. Without the permission
    the Delete button and the *Delete selected* action are gone."""

    def has_add_permission(self, request) -> bool:
        return False  # made by the pipeline, never by hand

    def has_delete_permission(self, request, obj=None) -> bool:
        user = request.user
        if not (user.is_active and user.is_superuser):
            return False
        return super().has_delete_permission(request, obj)  # type: ignore[misc]


def moment_of(value: str) -> datetime:
    """An ISO 8601 time from a query string, aware (a naive one is in TIME_ZONE, as a
    datetime-local field gives it); ValueError when it is not one, or not one the
    database can be given (in UTC it falls outside years 1 to 9999: year 1 at +14:00)."""
    moment = datetime.fromisoformat(value)
    try:
        moment = moment if timezone.is_aware(moment) else timezone.make_aware(moment)
        moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value!r} is out of range") from None
    return moment


class SinceFilter(admin.SimpleListFilter):
    """Rows whose ``field`` is at or after a moment: the last hour, 24 hours or 7 days
    (counted from now), or an exact time given as ISO 8601 (``?since=2026-12-01T10:00:00
    +03:00``: the front page's links name the hour its counts begin, so the list shows
    exactly the rows counted). An exact time shows as a choice of its own, selected, so
    the list says what it is filtered by."""

    title = _("since")
    parameter_name = "since"
    field = "created_at"
    SPANS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}

    @classmethod
    def on(cls, field: str) -> type[SinceFilter]:
        """The filter for the time field ``field``."""
        return type(f"SinceFilter_{field}", (cls,), {"field": field})

    def lookups(self, request, model_admin):
        choices: list[tuple[str, Any]] = [
            ("1h", _("the last hour")),
            ("24h", _("the last 24 hours")),
            ("7d", _("the last 7 days")),
        ]
        moment = self.moment()
        if moment is not None:
            shown = date_format(timezone.localtime(moment), "Y-m-d H:i")
            choices.append((str(self.value()), gettext("since %(time)s") % {"time": shown}))
        return choices

    def moment(self) -> datetime | None:
        """The exact time asked for, or None (none asked, or a named span)."""
        value = self.value()
        if not value or value in self.SPANS:
            return None
        try:
            return moment_of(value)
        except ValueError:
            raise IncorrectLookupParameters(
                gettext("%(value)s is not a time (ISO 8601)") % {"value": value}
            ) from None

    def queryset(self, request, queryset):
        value = self.value()
        if value in self.SPANS:
            return queryset.filter(**{f"{self.field}__gte": timezone.now() - self.SPANS[value]})
        moment = self.moment()
        if moment is not None:
            return queryset.filter(**{f"{self.field}__gte": moment})
        return queryset
