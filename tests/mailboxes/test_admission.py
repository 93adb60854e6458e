"""mailboxes.admission: how many of the messages a listener would fetch it may take in,
by count per instance and per mailbox and by size per instance (pure: the in-flight
figures are given, as the database would count them)."""

from __future__ import annotations

from mailboxes.admission import Admission, Grant, InFlight


def admission(figures: dict[int, InFlight], *, instance=100, mailbox=50, size=1000, held=(1, 2)):
    return Admission(
        instance_limit=instance,
        mailbox_limit=mailbox,
        size_limit=size,
        held=lambda: held,
        counts=lambda _ids: figures,
    )


def test_an_idle_instance_lets_in_all_that_fit():
    assert admission({}).grant(1, [10, 10, 10]) == Grant(3, 30)


def test_the_mailbox_bound_counts_its_messages_in_flight():
    gate = admission({1: InFlight(48, 0), 2: InFlight(40, 0)})
    assert gate.grant(1, [1, 1, 1, 1]) == Grant(2, 2)
    assert gate.grant(2, [1] * 20) == Grant(10, 10)  # the instance's 100 reached


def test_the_size_bound_lets_in_the_messages_that_fit_in_order():
    gate = admission({2: InFlight(3, 900)})
    assert gate.grant(1, [60, 30, 20, 1]) == Grant(2, 90)  # stops at the first too big


def test_at_the_size_bound_nothing_is_let_in():
    gate = admission({2: InFlight(1, 1000)})
    assert gate.grant(1, [1]) == Grant(0, 0)


def test_a_message_larger_than_the_size_bound_passes_alone_when_nothing_is_in_flight():
    gate = admission({})
    assert gate.grant(1, [5000, 1]) == Grant(1, 5000)
    # Until it is recorded and finished, nothing else comes in.
    assert gate.grant(2, [1]) == Grant(0, 0)


def test_messages_not_stored_count_no_size():
    gate = admission({2: InFlight(1, 1000)}, size=1000)
    assert gate.grant(1, [0, 0]) == Grant(2, 0)


def test_grants_not_yet_recorded_count_until_settled():
    gate = admission({}, mailbox=5, size=100)
    first = gate.grant(1, [40, 40, 40])
    assert first == Grant(2, 80)
    assert gate.grant(1, [10, 10, 10, 10]) == Grant(2, 20)  # 100 bytes granted
    assert gate.grant(2, [1]) == Grant(0, 0)
    gate.settle(1, first)
    assert gate.grant(2, [1]) == Grant(1, 1)


def test_settling_everything_forgets_the_mailbox():
    gate = admission({}, mailbox=2)
    grant = gate.grant(1, [1, 1, 1])
    assert grant == Grant(2, 2)
    assert gate.grant(1, [1]) == Grant(0, 0)
    gate.settle(1, grant)
    assert gate.grant(1, [1, 1, 1]) == Grant(2, 2)


def test_asking_for_nothing_grants_nothing():
    assert admission({}).grant(1, []) == Grant(0, 0)
