"""The front page's chart geometry and number formats (console.charts, no database)."""

from __future__ import annotations

import pytest
from django.utils import translation

from console import charts
from console.charts import Series, Slot

SERIES = [Series("ok", "Succeeded"), Series("failed", "Failed")]


def slots(*values: dict[str, float | None]) -> list[Slot]:
    return [
        Slot(label=f"{n:02}:00", title=f"{n:02}:00–{n + 1:02}:00", values=v)
        for n, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("maximum", "whole", "ticks"),
    [
        (0, True, [0, 1]),
        (3, True, [0, 1, 2, 3]),
        (7, True, [0, 2, 4, 6, 8]),
        (40, True, [0, 10, 20, 30, 40]),
        (0.9, False, [0, 0.5, 1.0]),
        (95, False, [0, 50, 100]),
    ],
)
def test_ticks_step_by_one_two_or_five_and_reach_the_maximum(maximum, whole, ticks):
    assert charts.nice_ticks(maximum, whole=whole) == pytest.approx(ticks)


def test_stacked_bars_stack_in_order_and_the_tallest_reaches_the_top_tick():
    chart = charts.stacked_bars(
        chart_id="c",
        title="t",
        description="d",
        series=SERIES,
        slots=slots({"ok": 6, "failed": 2}, {"ok": 0, "failed": 0}, {"ok": 3}),
    )

    first, empty, third = chart.columns
    assert [r.series for r in first.rects] == ["ok", "failed"]
    ok, failed = first.rects
    # The failed part sits on top of the succeeded one, touching it (coordinates are
    # rounded to a tenth).
    assert float(failed.y) + float(failed.height) == pytest.approx(float(ok.y), abs=0.11)
    assert float(ok.y) + float(ok.height) == pytest.approx(float(chart.plot_bottom), abs=0.11)
    assert float(failed.y) == pytest.approx(float(chart.y_ticks[-1].at), abs=0.11)  # 8 is the top
    assert empty.rects == []
    assert float(third.rects[0].height) == pytest.approx(float(ok.height) / 2, abs=0.11)
    assert "Failed: 2; Succeeded: 6" in first.title
    assert chart.table[1] == ["01:00–02:00", "0", "0"]
    assert not chart.empty


def test_lines_break_where_an_hour_has_no_value_and_an_empty_chart_says_so():
    chart = charts.lines(
        chart_id="c",
        title="t",
        description="d",
        series=[Series("p50", "Median")],
        slots=slots({"p50": 1.0}, {"p50": 2.0}, {}, {"p50": 4.0}),
        formatter=charts.format_duration,
    )

    (line,) = chart.lines
    assert [len(path.split()) for path in line.paths] == [2, 1]
    assert [row[1] for row in chart.table] == ["1.0 s", "2.0 s", "—", "4.0 s"]

    nothing = charts.lines(
        chart_id="c",
        title="t",
        description="d",
        series=[Series("p50", "Median")],
        slots=slots({}, {}),
        formatter=charts.format_duration,
    )
    assert nothing.empty and nothing.lines[0].paths == []


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (0.42, "0.4 s"),
        (12.3, "12 s"),
        (150, "2.5 min"),
        (7200, "2.0 h"),
        (3 * 86400, "3.0 d"),
    ],
)
def test_durations_read_in_the_largest_fitting_unit(seconds, shown):
    with translation.override("en"):
        assert charts.format_duration(seconds) == shown
