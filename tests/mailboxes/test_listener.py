"""mailboxes.listener: how long one IDLE may last, what the reconnect backoff counts and how
often a paused listener asks admission control again (pure)."""

from __future__ import annotations

import pytest

from mailboxes.listener import (
    STABLE_CONNECTION,
    admission_recheck,
    failures_counted,
    idle_timeout,
)


def test_without_a_check_interval_idle_lasts_the_whole_refresh():
    assert idle_timeout(300, 0, since_select=120) == 300


def test_with_a_check_interval_idle_is_left_for_a_search_every_interval():
    assert idle_timeout(300, 20, since_select=0) == 20
    assert idle_timeout(300, 20, since_select=100) == 20


@pytest.mark.parametrize(("since_select", "left"), [(290, 10), (299.5, 0.5), (300, 0), (301, 0)])
def test_idle_ends_when_the_refresh_is_due_even_before_the_check(since_select, left):
    assert idle_timeout(300, 20, since_select=since_select) == left


def test_a_negative_check_interval_means_none():
    assert idle_timeout(300, -1, since_select=0) == 300


# -- reconnect backoff ------------------------------------------------------------------


def test_failures_before_a_stable_connection_are_forgiven():
    assert failures_counted(5, connected_for=STABLE_CONNECTION) == 0
    assert failures_counted(5, connected_for=3600) == 0


def test_a_connection_that_fails_soon_after_the_login_keeps_the_backoff_growing():
    # A server that accepts LOGIN and SELECT, then fails at once, was retried every
    # second (the count was reset on every successful open).
    assert failures_counted(5, connected_for=0.2) == 5
    assert failures_counted(5, connected_for=STABLE_CONNECTION - 1) == 5


def test_a_connection_that_never_opened_counts_every_failure():
    assert failures_counted(3, connected_for=None) == 3


def test_a_paused_listener_asks_again_soon_then_less_often():
    waits, previous = [], None
    for _ in range(6):
        previous = admission_recheck(previous)
        waits.append(previous)
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]
