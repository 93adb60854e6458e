"""The time budget (Limits.max_seconds): checked every few thousand rows and once per
header candidate; past it, parse() stops with ParseTimeLimit naming the limit. The clock
is the test's: every reading of it moves it on by one second."""

from __future__ import annotations

import itertools

import pytest

from pricefeed.parsing import Limits, ParseTimeLimit, deadline, parse

from . import builders as b

HEAD = "Артикул;Наименование;Цена\n"
MESSAGE = "reading the file took more than {} s (max_seconds, setting PRICEFEED_PARSE_MAX_SECONDS)"


@pytest.fixture
def ticking(monkeypatch) -> list[int]:
    """A clock that moves one second per reading; returns the readings."""
    readings: list[int] = []
    clock = itertools.count()

    def now() -> int:
        readings.append(next(clock))
        return readings[-1]

    monkeypatch.setattr(deadline, "_now", now)
    return readings


def csv_of(count: int) -> bytes:
    return (HEAD + "".join(f"A-{i};Кабель {i};{i},50\n" for i in range(count))).encode()


@pytest.mark.parametrize("quoted", [False, True])
def test_a_long_file_is_stopped_at_the_time_limit_with_the_row_it_reached(ticking, quoted):
    data = csv_of(200_000)
    if quoted:
        data = b'"' + data.replace(b";", b'";', 1)
    with pytest.raises(ParseTimeLimit) as exc:
        parse(data, limits=Limits(max_seconds=60))
    message = str(exc.value)
    assert message.startswith(MESSAGE.format(60) + "; stopped at row ")
    assert len(ticking) <= 62  # the clock was read a few times per check, not per row


def test_the_header_search_is_checked_too(ticking):
    data = ("Прайс\n" * 40 + HEAD + "A-1;x;1\n").encode()
    with pytest.raises(ParseTimeLimit, match=r"stopped in the header search, row 6$"):
        parse(data, limits=Limits(max_seconds=5))


def test_a_workbook_is_checked_too(ticking):
    data = b.xlsx([["Артикул", "Цена"]] + [[f"A-{i}", i] for i in range(10_000)])
    with pytest.raises(ParseTimeLimit, match=r"; stopped at row "):
        parse(data, limits=Limits(max_seconds=3))


def test_a_file_read_in_time_is_not_stopped(ticking):
    result = parse(csv_of(20_000), limits=Limits(max_seconds=1000))
    assert result.rows_ok == 20_000
    assert 0 < len(ticking) < 100
