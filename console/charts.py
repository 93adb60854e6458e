"""Charts drawn on the server as SVG: this module does the geometry, the template
``console/chart.html`` draws it. No database and no request here.

Every coordinate is handed to the template as a string made here (``_n``): a number in
a template would be localized (``12,5`` in Russian), which is no SVG coordinate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from django.utils.formats import localize, number_format
from django.utils.translation import gettext

# The drawing's own units (the SVG scales to the width it is given).
WIDTH = 520
HEIGHT = 200
LEFT = 52  # room for the y axis' labels
RIGHT = 8
TOP = 10
BOTTOM = 24  # room for the x axis' labels
BAR_SHARE = 0.72  # of a slot's width
X_LABEL_EVERY = 3  # slots


@dataclass(frozen=True)
class Series:
    key: str  # the CSS class pf-<key> colours it
    label: str


@dataclass(frozen=True)
class Slot:
    """One column of a chart: an hour or a day."""

    label: str  # under the axis, e.g. "14:00"
    title: str  # in its tooltip and the table, e.g. "14:00–15:00"
    values: Mapping[str, float | None]  # by series key; None: nothing to show


@dataclass(frozen=True)
class Rect:
    x: str
    y: str
    width: str
    height: str
    series: str


@dataclass(frozen=True)
class Column:
    x: str  # the slot's left edge and width: the hover area of its tooltip
    width: str
    rects: list[Rect]
    title: str


@dataclass(frozen=True)
class Dot:
    x: str
    y: str
    title: str


@dataclass(frozen=True)
class Line:
    series: str
    paths: list[str]  # polyline points, one per unbroken run of slots with a value
    dots: list[Dot]


@dataclass(frozen=True)
class Tick:
    at: str  # y of a gridline, x of a label
    label: str


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    description: str
    series: list[Series]
    columns: list[Column] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    x_labels: list[Tick] = field(default_factory=list)
    table: list[list[str]] = field(default_factory=list)  # a row per slot: title, values
    empty: bool = False
    width: str = str(WIDTH)
    height: str = str(HEIGHT)
    plot_left: str = str(LEFT)
    plot_right: str = str(WIDTH - RIGHT)
    plot_bottom: str = str(HEIGHT - BOTTOM)
    label_y: str = str(HEIGHT - 6)


def nice_ticks(maximum: float, *, count: int = 4, whole: bool = False) -> list[float]:
    """Gridline values from 0 to the first one at or above ``maximum``: steps of 1, 2 or
    5 times a power of ten, about ``count`` of them; whole numbers only if ``whole``."""
    if maximum <= 0:
        return [0.0, 1.0]
    rough = maximum / count
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
    if whole:
        step = max(1.0, float(math.ceil(step)))
    top = math.ceil(maximum / step - 1e-9)
    return [step * n for n in range(top + 1)]


def stacked_bars(
    *,
    chart_id: str,
    title: str,
    description: str,
    series: Sequence[Series],
    slots: Sequence[Slot],
) -> Chart:
    """A column per slot, its series stacked bottom up in the order given (counts)."""
    ticks = nice_ticks(
        max((sum(v or 0 for v in s.values.values()) for s in slots), default=0), whole=True
    )
    scale = _scale(ticks[-1])
    slot_width = (WIDTH - LEFT - RIGHT) / max(1, len(slots))
    bar_width = slot_width * BAR_SHARE
    columns = []
    for index, slot in enumerate(slots):
        left = LEFT + index * slot_width
        base = 0.0
        rects = []
        for one in series:
            value = slot.values.get(one.key) or 0
            if value:
                rects.append(
                    Rect(
                        x=_n(left + (slot_width - bar_width) / 2),
                        y=_n(scale(base + value)),
                        width=_n(bar_width),
                        height=_n(scale(base) - scale(base + value)),
                        series=one.key,
                    )
                )
            base += value
        columns.append(
            Column(
                x=_n(left),
                width=_n(slot_width),
                rects=rects,
                title=_tooltip(slot, series, localize),
            )
        )
    return Chart(
        id=chart_id,
        title=title,
        description=description,
        series=list(series),
        columns=columns,
        y_ticks=[Tick(at=_n(scale(t)), label=localize(int(t))) for t in ticks],
        x_labels=_x_labels(slots, slot_width),
        table=_table(slots, series, localize),
        empty=not any(any(s.values.values()) for s in slots),
    )


def lines(
    *,
    chart_id: str,
    title: str,
    description: str,
    series: Sequence[Series],
    slots: Sequence[Slot],
    formatter: Callable[[float], str],
) -> Chart:
    """A line per series through the middle of each slot; a slot without a value breaks
    the line (there is nothing to join it to)."""
    ticks = nice_ticks(
        max((v for s in slots for v in s.values.values() if v is not None), default=0)
    )
    scale = _scale(ticks[-1])
    slot_width = (WIDTH - LEFT - RIGHT) / max(1, len(slots))
    drawn = []
    for one in series:
        paths: list[list[str]] = [[]]
        dots = []
        for index, slot in enumerate(slots):
            value = slot.values.get(one.key)
            if value is None:
                paths.append([])
                continue
            x, y = _n(LEFT + (index + 0.5) * slot_width), _n(scale(value))
            paths[-1].append(f"{x},{y}")
            dots.append(Dot(x=x, y=y, title=_pair(slot.title, f"{one.label}: {formatter(value)}")))
        drawn.append(Line(series=one.key, paths=[" ".join(p) for p in paths if p], dots=dots))
    return Chart(
        id=chart_id,
        title=title,
        description=description,
        series=list(series),
        lines=drawn,
        y_ticks=[Tick(at=_n(scale(t)), label=formatter(t)) for t in ticks],
        x_labels=_x_labels(slots, slot_width),
        table=_table(slots, series, formatter),
        empty=not any(v is not None for s in slots for v in s.values.values()),
    )


def format_duration(seconds: float) -> str:
    """A duration for people, in the active language's numbers: 0.4 s, 12 s, 3.5 min,
    2 h, 3 d."""
    for limit, unit, label in (
        (60, 1, gettext("%(n)s s")),
        (3600, 60, gettext("%(n)s min")),
        (86400, 3600, gettext("%(n)s h")),
    ):
        if seconds < limit:
            return label % {"n": _short(seconds / unit)}
    return gettext("%(n)s d") % {"n": _short(seconds / 86400)}


def _short(value: float) -> str:
    if value == 0:
        return number_format(0)
    return number_format(value, decimal_pos=1 if value < 10 else 0)


def _scale(top: float) -> Callable[[float], float]:
    height = HEIGHT - TOP - BOTTOM

    def y(value: float) -> float:
        return HEIGHT - BOTTOM - (value / top) * height if top else HEIGHT - BOTTOM

    return y


def _x_labels(slots: Sequence[Slot], slot_width: float) -> list[Tick]:
    return [
        Tick(at=_n(LEFT + (index + 0.5) * slot_width), label=slot.label)
        for index, slot in enumerate(slots)
        if index % X_LABEL_EVERY == 0
    ]


def _tooltip(slot: Slot, series: Sequence[Series], formatter: Callable) -> str:
    parts = [
        f"{one.label}: {formatter(slot.values.get(one.key) or 0)}"
        for one in reversed(series)  # top of the stack first, as drawn
    ]
    return _pair(slot.title, "; ".join(parts))


def _pair(when: str, what: str) -> str:
    return gettext("%(when)s — %(what)s") % {"when": when, "what": what}


def _table(slots: Sequence[Slot], series: Sequence[Series], formatter: Callable) -> list[list[str]]:
    return [
        [
            slot.title,
            *(
                "—" if slot.values.get(one.key) is None else formatter(slot.values[one.key])
                for one in series
            ),
        ]
        for slot in slots
    ]


def _n(value: float) -> str:
    """A coordinate as SVG wants it, whatever the language: 12.5, never 12,5."""
    return f"{value:.1f}".removesuffix(".0")
