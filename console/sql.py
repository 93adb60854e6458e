"""The SQL of the front page that the ORM does not write."""

from __future__ import annotations

from typing import Any

from django.db.models import Aggregate, DurationField


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(fraction) WITHIN GROUP (ORDER BY expression)``
    over durations: the value below which ``fraction`` of the rows lie, interpolated
    linearly between the two nearest rows (an interval in, an interval out)."""

    function = "percentile_cont"
    name = "PercentileCont"
    # The fraction is a float of this code's own, never input, written as a literal.
    template = "%(function)s(%(fraction)r) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"a fraction is between 0 and 1, not {fraction!r}")
        super().__init__(
            expression, fraction=float(fraction), output_field=DurationField(), **extra
        )
