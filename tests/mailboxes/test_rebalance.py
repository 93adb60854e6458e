"""mailboxes.rebalance: the sharing rules, by simulation (pure logic, no database).

Each simulated round lets every instance, in a random order, read the current picture
and carry out its own plan, as independent processes would.
"""

from __future__ import annotations

import random

import pytest

from mailboxes.rebalance import Snapshot, plan

TOLERANCE = 0.5  # the default
GRACE = 3.0  # rounds a free mailbox waits for its designated taker
KEEP_ROUNDS = 30  # rounds a mailbox taken by fallback is not offered again


class Cluster:
    def __init__(self, weights: dict[int, int], instances: list[str], seed: int = 1) -> None:
        self.weights = weights
        self.live = set(instances)
        self.owners: dict[int, str] = {}
        self.free_for = dict.fromkeys(weights, 0.0)
        self.moves = 0  # acquisitions, the expensive part of a move
        self.rng = random.Random(seed)
        self.absent: set[str] = set()  # live by heartbeat, but never takes anything
        self.kept: dict[str, dict[int, int]] = {}  # instance -> fallback mailbox -> rounds left

    def snapshot(self, me: str) -> Snapshot:
        return Snapshot(
            me=me,
            live=frozenset(self.live),
            weights=self.weights,
            owners=dict(self.owners),
            free_for=dict(self.free_for),
        )

    def round(self) -> int:
        changes = 0
        order = sorted(self.live)
        self.rng.shuffle(order)
        for me in order:
            if me in self.absent:
                continue
            kept = self.kept.setdefault(me, {})
            p = plan(self.snapshot(me), tolerance=TOLERANCE, grace=GRACE, keep=frozenset(kept))
            kept.update(dict.fromkeys(p.fallback, KEEP_ROUNDS))
            for m in p.release:
                assert self.owners[m] == me
                del self.owners[m]
                self.free_for[m] = 0.0
                changes += 1
            for m in p.acquire:
                if m not in self.owners:  # the conditional UPDATE: first one wins
                    self.owners[m] = me
                    self.free_for.pop(m, None)
                    self.moves += 1
                    changes += 1
        for m in self.free_for:
            self.free_for[m] += 1.0
        for kept in self.kept.values():
            for m in list(kept):
                kept[m] -= 1
                if kept[m] <= 0:
                    del kept[m]
        return changes

    def settle(self, max_rounds: int = 25) -> int:
        """Rounds until nothing has changed for longer than the grace; returns how many
        rounds had changes."""
        quiet = busy = 0
        for _ in range(max_rounds):
            if self.round():
                quiet, busy = 0, busy + 1
            else:
                quiet += 1
                if quiet > GRACE + 1:
                    return busy
        raise AssertionError(f"no convergence in {max_rounds} rounds: {self.held()}")

    def held(self) -> dict[str, int]:
        held = dict.fromkeys(self.live, 0)
        for m, owner in self.owners.items():
            held[owner] += self.weights[m]
        return held

    def share(self) -> float:
        return sum(self.weights.values()) / len(self.live)


UNEVEN = {1: 5, 2: 4, 3: 4, 4: 3, 5: 3, 6: 3, 7: 2, 8: 2, 9: 2, 10: 1, 11: 1, 12: 1, 13: 1}


def test_three_instances_starting_together_share_by_weight():
    cluster = Cluster(UNEVEN, ["a", "b", "c"])

    cluster.settle()

    assert set(cluster.owners) == set(UNEVEN)  # every mailbox has a listener
    share = cluster.share()  # 32 / 3
    for instance, held in cluster.held().items():
        assert abs(held - share) <= 1, (instance, cluster.held())  # one config-weight


def test_scale_up_from_two_to_three_moves_a_few_leases_then_stops():
    cluster = Cluster(UNEVEN, ["a", "b"])
    cluster.settle()
    before = dict(cluster.owners)

    cluster.live.add("c")
    cluster.moves = 0
    cluster.settle()

    for instance, held in cluster.held().items():
        assert abs(held - cluster.share()) <= 1, (instance, cluster.held())
    moved = sum(1 for m, owner in cluster.owners.items() if before[m] != owner)
    assert moved == cluster.moves  # every move was to the newcomer, none back and forth
    assert all(cluster.owners[m] == "c" for m in cluster.owners if before[m] != cluster.owners[m])
    for _ in range(20):
        assert cluster.round() == 0  # and nothing moves afterwards


def test_a_dead_instances_mailboxes_go_to_the_others():
    cluster = Cluster(UNEVEN, ["a", "b", "c"])
    cluster.settle()
    orphaned = [m for m, owner in cluster.owners.items() if owner == "b"]

    cluster.live.discard("b")
    for m in orphaned:  # their leases expired
        del cluster.owners[m]
        cluster.free_for[m] = 0.0
    cluster.settle()

    assert set(cluster.owners) == set(UNEVEN)
    assert set(cluster.owners.values()) == {"a", "c"}
    held = cluster.held()
    assert abs(held["a"] - held["c"]) <= max(UNEVEN.values())


def test_unexpired_leases_of_a_silent_owner_are_left_alone():
    """A paused instance vanishes from the live list before its leases expire; nobody
    may take them until they do."""
    cluster = Cluster(UNEVEN, ["a", "b"])
    cluster.settle()
    cluster.live.discard("b")

    cluster.settle()

    assert {m for m, o in cluster.owners.items() if o == "b"}, "b's leases were taken"


def test_a_free_mailbox_whose_designated_taker_never_comes_is_taken_after_the_grace():
    cluster = Cluster({1: 1, 2: 1}, ["a", "ghost"])
    cluster.absent.add("ghost")

    cluster.round()
    assert len(cluster.owners) == 1  # "a" took its own, left the ghost's
    cluster.settle()

    assert set(cluster.owners) == {1, 2}
    assert set(cluster.owners.values()) == {"a"}
    changes = sum(cluster.round() for _ in range(KEEP_ROUNDS - 10))
    assert changes == 0  # not handed back to the ghost over and over


def test_weight_zero_mailboxes_are_listened_to_but_never_shed():
    cluster = Cluster({1: 0, 2: 0, 3: 6}, ["a", "b"])

    cluster.settle()

    assert set(cluster.owners) == {1, 2, 3}


@pytest.mark.parametrize("seed", range(40))
def test_random_clusters_converge_and_then_never_move(seed):
    rng = random.Random(seed)
    weights = {m: rng.choice([0, 1, 1, 1, 2, 2, 3, 5, 8]) for m in range(rng.randint(1, 40))}
    instances = [f"i{n}" for n in range(rng.randint(1, 6))]
    cluster = Cluster(weights, instances[: max(1, len(instances) // 2)], seed=seed)
    cluster.settle()
    for newcomer in instances:  # scale up one by one
        cluster.live.add(newcomer)
        cluster.settle()

    assert set(cluster.owners) == set(weights)
    for _ in range(10):
        assert cluster.round() == 0
    # Stable means: nobody above share + tolerance still has a lease it could hand to
    # the least loaded peer while narrowing the gap.
    held, share = cluster.held(), cluster.share()
    for me, load in held.items():
        if load <= share + TOLERANCE or len(held) == 1:
            continue
        lightest_peer = min(v for k, v in held.items() if k != me)
        movable = [
            weights[m]
            for m, o in cluster.owners.items()
            if o == me and 0 < weights[m] < load - lightest_peer
        ]
        assert not movable, (me, held, movable)
