"""Small helpers for the apps' admin classes: how every list shows a time, a long text
and a duration, and what every list of audit records shares (its stylesheet, no
Delete but for superusers)."""

from __future__ import annotations

import json
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import actions, helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import BadRequest, FieldDoesNotExist
from django.db.models import DateField
from django.db.models.options import Options
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.formats import number_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import capfirst
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext, pgettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core import grammar

# The stylesheet of the lists (column widths, two-line cells), in static files.
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
    """A text in a list: at most two lines of the column (``s``, ``m`` or ``l``: the
    stylesheet clamps it) with an ellipsis, the whole of it on hover; in red when it is
    an error. The page carries no more than two lines of the widest column could show."""
    assert width in WIDTHS, width
    full = str(text or "").strip()
    if not full:
        return EMPTY
    # No line breaks in the cell; the tooltip keeps them.
    line = " ".join(full.split())
    limit = {"s": 80, "m": 160, "l": 320}[width]
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
    "Partial (some rows failed)"), cut to 16 characters and on one line (a status reads
    badly broken), the whole label on hover."""
    full = str(getattr(obj, f"get_{field}_display")())
    short = " ".join(full.split(" (")[0].split())
    if len(short) > 16:
        short = short[:15] + "…"
    return format_html('<span class="pf-label" title="{}">{}</span>', full, short)


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


def fields_without(fields, names: set[str]) -> list:
    """A fieldset's fields (names, or tuples of names on one line) but ``names``."""
    kept: list = []
    for field in fields:
        if isinstance(field, list | tuple):
            line = tuple(f for f in field if f not in names)
            if line:
                kept.append(line)
        elif field not in names:
            kept.append(field)
    return kept


# The model whose selected objects the *Delete selected* action is deleting, and how
# many: its success message is said with the model's counted forms.
_deleting: ContextVar[tuple[Options, int] | None] = ContextVar("deleting", default=None)


@admin.action(permissions=["delete"], description=_("Delete selected %(verbose_name_plural)s"))
def delete_selected(modeladmin, request, queryset):
    """Django's *Delete selected*, its confirmation and its message naming the objects
    in the form the sentence needs ("Удалить выбранные подписки", "Удалено: 5
    подписок")."""
    opts = modeladmin.opts
    token = _deleting.set((opts, queryset.count()))
    try:
        response = actions.delete_selected(modeladmin, request, queryset)
    finally:
        _deleting.reset(token)
    if isinstance(response, TemplateResponse) and response.context_data is not None:
        objects = grammar.accusative_plural(opts)
        response.context_data["objects_name"] = objects
        if response.context_data.get("perms_lacking") or response.context_data.get("protected"):
            response.context_data["title"] = gettext("Cannot delete %(name)s") % {"name": objects}
    return response


class GrammarAdminMixin:
    """The admin's sentences with our models' names in the right form (core/grammar.py):
    the list's title, the change page's title, the *Delete selected* action and its
    messages, the delete page, the inlines' *Add another*. Django says each of them with
    the nominative ("Выберите пользователь для изменения")."""

    def changelist_view(self, request, extra_context=None):
        if "_popup" in request.GET:
            title = gettext("Select %s")
        elif self.has_change_permission(request):  # type: ignore[attr-defined]
            title = gettext("Select %s to change")
        else:
            title = gettext("Select %s to view")
        title %= grammar.accusative(self.opts)  # type: ignore[attr-defined]
        return super().changelist_view(  # type: ignore[misc]
            request, {"title": capfirst(title), **(extra_context or {})}
        )

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if add:
            title = gettext("Add %s")
        elif self.has_change_permission(request, obj):  # type: ignore[attr-defined]
            title = gettext("Change %s")
        else:
            title = gettext("View %s")
        context["title"] = title % grammar.accusative(self.opts)  # type: ignore[attr-defined]
        for formset in context.get("inline_admin_formsets", ()):
            formset.inline_formset_data = partial(_inline_formset_data, formset)
        return super().render_change_form(  # type: ignore[misc]
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def delete_view(self, request, object_id, extra_context=None):
        name = grammar.accusative(self.opts)  # type: ignore[attr-defined]
        return super().delete_view(  # type: ignore[misc]
            request, object_id, {"object_name": name, **(extra_context or {})}
        )

    def get_action_choices(self, request, *args, **kwargs):
        choices = super().get_action_choices(request, *args, **kwargs)  # type: ignore[misc]
        description = gettext("Delete selected %(verbose_name_plural)s") % {
            "verbose_name_plural": grammar.accusative_plural(self.opts)  # type: ignore[attr-defined]
        }
        return [
            (name, description if name == "delete_selected" else said) for name, said in choices
        ]

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs):
        deleting = _deleting.get()
        if deleting is not None and level == messages.SUCCESS:
            opts, number = deleting
            message = gettext("Deleted: %(objects)s.") % {"objects": grammar.counted(number, opts)}
        return super().message_user(request, message, level, *args, **kwargs)  # type: ignore[misc]


def _inline_formset_data(formset: helpers.InlineAdminFormSet) -> str:
    """An inline's settings for its script, with *Add another* naming the object in
    the accusative ("Добавить ещё настройку прайс-листа")."""
    data = json.loads(helpers.InlineAdminFormSet.inline_formset_data(formset))
    data["options"]["addText"] = gettext("Add another %(verbose_name)s") % {
        "verbose_name": grammar.accusative(formset.opts.model._meta)
    }
    return json.dumps(data)


# The years a time in a list's query string may name: a filter of Django's (a date
# hierarchy, "past 7 days") never leaves them, and near the calendar's ends a time in the
# reader's zone falls outside it in UTC (year 1 at +03:00), which the database is not
# given.
QUERY_YEARS = range(1900, 9000)
TIME_LOOKUPS = {"", "exact", "gt", "gte", "lt", "lte"}


class ReadableQueryMixin:
    """A list answers a 400 for a filter value it cannot read (``?state=bogus``, a time
    past the calendar), where Django would answer 500 or redirect to its "?e=1" page,
    which says the database is broken."""

    def changelist_view(self, request, extra_context=None):
        for key, values in request.GET.lists():
            name, _, lookup = key.partition("__")
            try:
                field = self.model._meta.get_field(name)  # type: ignore[attr-defined]
            except FieldDoesNotExist:
                continue
            if isinstance(field, DateField) and lookup in TIME_LOOKUPS:
                for value in values:
                    _readable_time(value)
        return super().changelist_view(request, extra_context)  # type: ignore[misc]

    def get_changelist_instance(self, request):
        try:
            return super().get_changelist_instance(request)  # type: ignore[misc]
        except IncorrectLookupParameters as exc:
            raise BadRequest(str(exc)) from exc


def _readable_time(value: str) -> None:
    """Raises BadRequest for a time of a query string outside QUERY_YEARS; what is not
    a time at all is left to the field, which refuses it (IncorrectLookupParameters)."""
    try:
        year = datetime.fromisoformat(value.strip()).year
    except ValueError:
        return
    if year not in QUERY_YEARS:
        raise BadRequest(f"{value!r}: a time outside the years {QUERY_YEARS.start} to 8999")


class ListAdminMixin(ReadableQueryMixin, GrammarAdminMixin):
    """Every list of the apps: its stylesheet (two-line cells, column widths), and its
    model's plural name as its title ("Импорты прайс-листов"): the name of what the list
    holds says more than "Выберите импорт прайс-листа для изменения". Its add page leaves
    out the fields the database fills (``db_default``): before the row is saved they
    have no value, and Django would show its placeholder's repr."""

    class Media:
        css = {"all": [LIST_CSS]}

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)  # type: ignore[misc]
        if obj is not None:
            return fieldsets
        given = {
            field.name
            for field in self.model._meta.concrete_fields  # type: ignore[attr-defined]
            if field.has_db_default()
        }
        return [
            (name, {**options, "fields": fields_without(options["fields"], given)})
            for name, options in fieldsets
        ]

    def changelist_view(self, request, extra_context=None):
        title = capfirst(self.model._meta.verbose_name_plural)  # type: ignore[attr-defined]
        return super().changelist_view(request, {"title": title, **(extra_context or {})})


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


def numbered(number: object) -> str:
    """A row's number as the reader's language writes it: "#12" in English, "№ 12" in
    Russian (the same msgid as the mails' "#{{ pk }}" in templates)."""
    return pgettext("number", "#%(pk)s") % {"pk": number}


class RetriedFilter(admin.SimpleListFilter):
    """Rows tried more than once (``attempts`` above 1) or not: the trouble a row that
    got through in the end no longer shows by its status."""

    title = _("retried")
    parameter_name = "retried"

    def lookups(self, request, model_admin):
        return [("yes", pgettext_lazy("retried", "yes")), ("no", pgettext_lazy("retried", "no"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(attempts__gt=1)
        if self.value() == "no":
            return queryset.filter(attempts__lte=1)
        return queryset
